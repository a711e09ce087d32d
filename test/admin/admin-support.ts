import { Module } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { ServerPreparer } from '../../src/health';
import { BaseRouter, RoutingPolicy, type GetNextServerOptions, type RouteResult, type RoutingRequest } from '../../src/routing';
import { ServerRegistry } from '../../src/servers';
import { json, type FakeHandler, type ReceivedRequest } from '../support/fake-worker';
import type { RunningRouter } from '../support/router-app';
import { waitFor } from '../support/router-app';

export const TOKEN = 'test-admin-token-0123456789';

export interface AdminResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One admin API call with the test token (or the given Authorization header, or none). */
export async function admin(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  authorization: string | null = `Bearer ${TOKEN}`,
): Promise<AdminResponse> {
  const headers: Record<string, string> = {};
  if (authorization !== null) headers.authorization = authorization;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}/admin/v1/${path}`, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

export function errorOf(res: AdminResponse): { message: string; type: string; param: string | null; code: string | null } {
  return res.body.error as { message: string; type: string; param: string | null; code: string | null };
}

/**
 * Waits until a server added at runtime is ready. The health module prepares it when it is
 * part of the app; without it nothing would, so the test plays its part.
 */
export async function whenReady(router: RunningRouter, id: string): Promise<void> {
  const registry = router.app.get(ServerRegistry);
  let preparer: ServerPreparer | undefined;
  try {
    preparer = router.app.get(ServerPreparer, { strict: false });
  } catch {
    preparer = undefined;
  }
  if (!preparer) {
    const server = registry.get(id);
    if (server?.status === 'preparing') registry.setStatus(server, 'ready');
  }
  await waitFor(() => registry.get(id)?.status === 'ready', 10_000, `${id} ready`);
}

/** A gate a worker's stream waits on until the test opens it. */
export class Gate {
  opened = false;
  private resolveOpen!: () => void;
  readonly promise = new Promise<void>((resolve) => (this.resolveOpen = resolve));

  open(): void {
    this.opened = true;
    this.resolveOpen();
  }
}

/**
 * An aggregated-mode generation worker: JSON answers at once, streams send one chunk and
 * then wait for `gate` before they finish.
 */
export function heldStreamHandler(gate: Gate, name: string): FakeHandler {
  return async (req: ReceivedRequest, res: ServerResponse) => {
    const body = req.body ?? {};
    const choice = (text: string, finish: string | null) => ({ index: 0, text, finish_reason: finish });
    if (!body.stream) {
      json(res, 200, { id: `cmpl-${name}`, object: 'text_completion', model: body.model, choices: [choice(name, 'length')], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ id: `cmpl-${name}`, object: 'text_completion', choices: [choice('first', null)] })}\n\n`);
    await gate.promise;
    res.write(`data: ${JSON.stringify({ id: `cmpl-${name}`, object: 'text_completion', choices: [choice('last', 'length')] })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

/** Reads a streaming response until its first event arrived; returns a reader for the rest. */
export async function openStream(url: string): Promise<{ first: string; rest: () => Promise<string> }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', prompt: 'hello', stream: true }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let first = '';
  while (!first.includes('\n\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    first += decoder.decode(value, { stream: true });
  }
  const rest = async (): Promise<string> => {
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text;
      text += decoder.decode(value, { stream: true });
    }
  };
  return { first, rest };
}

export async function complete(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt: 'hi' }) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`completion answered ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** A custom policy for the tests: always the first ready server, with a validated argument. */
@RoutingPolicy('first_server', z.strictObject({ label: z.string().min(1).default('first') }))
export class FirstServerRouter extends BaseRouter<{ label: string }> {
  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    return this.reserve(request, this.candidates(options)[0]);
  }
}

@Module({ providers: [FirstServerRouter] })
export class TestPoliciesModule {}
