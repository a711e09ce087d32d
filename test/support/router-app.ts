import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ModuleMetadata } from '@nestjs/common';
import type { DestinationStream } from 'pino';
import { createRouterApp } from '../../src/app.factory';
import { buildConfig, type AppConfigInput } from '../../src/config';
import { ServerRegistry } from '../../src/servers';

export interface RunningRouter {
  app: NestFastifyApplication;
  url: string;
  close(): Promise<void>;
}

/** Boots the real app through NestFactory and listens on a free loopback port. */
export async function startRouter(
  config: AppConfigInput,
  imports?: ModuleMetadata['imports'],
  options: { waitReady?: boolean; logDestination?: DestinationStream } = {},
): Promise<RunningRouter> {
  const app = await createRouterApp(buildConfig({ logging: { level: 'error' }, ...config }), {
    imports,
    // A test that captures the log lines reads them at the config's level.
    ...(options.logDestination
      ? { logDestination: options.logDestination }
      : { logger: process.env.TEST_LOGS ? ['error', 'warn', 'log', 'debug'] : ['error'] }),
  });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  // Configured servers are health-checked before they get traffic: wait until every one
  // that answers is ready (bounded; a test may configure dead servers on purpose).
  if (options.waitReady !== false) await waitForPrepared(app).catch(() => undefined);
  return { app, url, close: () => app.close() };
}

async function waitForPrepared(app: NestFastifyApplication): Promise<void> {
  const registry = app.get(ServerRegistry);
  await waitFor(() => registry.list().every((s) => s.status !== 'preparing' || (s.lastHealth !== undefined && !s.lastHealth.ok)), 10_000, 'servers prepared');
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown>; headers: Headers; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    /* not JSON: tests look at text */
  }
  return { status: res.status, json, headers: res.headers, text };
}

/** Polls until `check` holds (or fails after `timeoutMs`), instead of sleeping. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
