import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { contextHandler, FakeWorker, generationHandler, json, type ReceivedRequest } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { allIdle } from './support/sim-helpers';

type Mode = 'ok' | 'fail' | 'hang';

/** A generation worker whose behaviour the test switches between answers. */
function switchableGeneration(state: { mode: Mode }) {
  const ok = generationHandler();
  return (req: ReceivedRequest, res: ServerResponse, w: FakeWorker) => {
    if (state.mode === 'fail') return json(res, 500, { error: { message: 'boom', type: 'InternalServerError', code: 500 } });
    if (state.mode === 'hang' && req.body?.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'x', object: 'text_completion', choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
      return; // never ends: the client has to leave
    }
    return ok(req, res, w);
  };
}

const POLICIES: [string, Record<string, unknown>][] = [
  ['round_robin', {}],
  ['load_balancing', { use_tokens: true, tokenizer: 'bytes' }],
  ['kv_cache_aware', { tokens_per_block: 4, tokenizer: 'bytes' }],
  ['conversation', { tokens_per_block: 4 }],
];

describe.each(POLICIES)('%s: load returns to zero and retries avoid the failed server', (type, args) => {
  let ctx: FakeWorker;
  const gens: FakeWorker[] = [];
  const modes = [{ mode: 'ok' as Mode }, { mode: 'ok' as Mode }];
  let router: RunningRouter;

  beforeAll(async () => {
    ctx = await new FakeWorker(contextHandler()).start();
    for (const m of modes) gens.push(await new FakeWorker(switchableGeneration(m)).start());
    router = await startRouter({
      max_retries: 1,
      context_servers: { urls: [ctx.url], router: { type, ...args } },
      generation_servers: { urls: gens.map((g) => g.url), router: { type, ...args } },
    });
  });
  afterAll(async () => {
    await router?.close();
    await Promise.all([ctx, ...gens].map((w) => w?.close()));
  });

  const body = (i: number) => ({ model: 'm', prompt: `prompt number ${i} with some words`, max_tokens: 2, disaggregated_params: { conversation_id: `c-${i % 2}` } });

  it('after successful requests, streamed or not', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await postJson(`${router.url}/v1/completions`, { ...body(i), stream: i % 2 === 1 });
      expect(res.status).toBe(200);
    }
    await waitFor(() => allIdle(router.app), 10_000, 'idle after success');
  });

  it('after upstream failures on every server (502 to the client)', async () => {
    modes.forEach((m) => (m.mode = 'fail'));
    try {
      const res = await postJson(`${router.url}/v1/completions`, body(7));
      expect(res.status).toBe(502);
      expect(res.json.error).toBeDefined();
    } finally {
      modes.forEach((m) => (m.mode = 'ok'));
    }
    await waitFor(() => allIdle(router.app), 10_000, 'idle after failure');
  });

  it('retries a failed server on the other one, never the same', async () => {
    modes[0].mode = 'fail';
    try {
      for (let i = 0; i < 4; i++) {
        const before = gens.map((g) => g.requests('/v1/completions').length);
        const res = await postJson(`${router.url}/v1/completions`, body(i));
        expect(res.status).toBe(200);
        const delta = gens.map((g, j) => g.requests('/v1/completions').length - before[j]);
        // The failing server is tried at most once; the healthy one answers every request.
        expect(delta[0]).toBeLessThanOrEqual(1);
        expect(delta[1]).toBe(1);
      }
    } finally {
      modes[0].mode = 'ok';
    }
    await waitFor(() => allIdle(router.app), 10_000, 'idle after retries');
  });

  it('after the client leaves mid-stream', async () => {
    modes.forEach((m) => (m.mode = 'hang'));
    const abortedBefore = gens.reduce((n, g) => n + g.aborted, 0);
    try {
      const controller = new AbortController();
      const res = await fetch(`${router.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...body(3), stream: true }),
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toContain('data: ');
      controller.abort();
      await reader.cancel().catch(() => undefined);
      await waitFor(() => gens.reduce((n, g) => n + g.aborted, 0) > abortedBefore, 10_000, 'upstream call aborted');
      await waitFor(() => allIdle(router.app), 10_000, 'idle after client abort');
    } finally {
      modes.forEach((m) => (m.mode = 'ok'));
    }
  });
});
