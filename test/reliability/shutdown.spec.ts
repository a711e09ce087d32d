import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { contextHandler, FakeWorker } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { postStream, readSse } from '../support/sse';
import { gate, type Gate } from './support/gate';
import { buildRouter, spawnRouter, type RouterProcess } from './support/router-process';

const CHUNKS = 5;
const chunk = (i: number): string =>
  `data: ${JSON.stringify({ id: 'g', object: 'text_completion', choices: [{ index: 0, text: `t${i}`, finish_reason: i === CHUNKS - 1 ? 'length' : null }] })}\n\n`;

/** A stream that sends its first event, then the rest once the test opens the gate. */
function heldStream(getGate: () => Gate) {
  return async (_req: unknown, res: ServerResponse): Promise<void> => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk(0));
    await getGate().wait;
    if (res.destroyed) return;
    for (let i = 1; i < CHUNKS; i++) res.write(chunk(i));
    res.end('data: [DONE]\n\n');
  };
}

describe('graceful shutdown of the router process', () => {
  let build: ReturnType<typeof buildRouter>;
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let hold: Gate;
  let router: RouterProcess | undefined;
  const body = { model: 'm', prompt: 'hello', stream: true };

  beforeAll(async () => {
    build = buildRouter();
    ctx = await new FakeWorker(contextHandler()).start();
    gen = await new FakeWorker(heldStream(() => hold)).start();
  }, 120_000);
  afterAll(async () => {
    await ctx?.close();
    await gen?.close();
    build?.dispose();
  });
  afterEach(() => {
    hold?.open();
    router?.kill();
    router = undefined;
  });

  const start = (drainTimeoutS: number): Promise<RouterProcess> =>
    spawnRouter(build.mainJs, {
      context_servers: { urls: [ctx.url] },
      generation_servers: { urls: [gen.url] },
      shutdown: { drain_timeout_s: drainTimeoutS },
    });

  /** Starts a streaming request and resolves once its first event arrived; `rest` ends with the stream. */
  async function streamInFlight(url: string): Promise<{ rest: Promise<string[]> }> {
    const res = await postStream(`${url}/v1/completions`, body);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    // Buffer, not TextDecoder: the chunks come from another realm under jest's VM modules.
    expect(Buffer.from(first.value!).toString()).toContain('t0');
    const rest = (async () => {
      let text = Buffer.from(first.value!).toString();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      return readSse(new Response(text));
    })();
    return { rest };
  }

  it('SIGTERM: health turns 503, new requests get 503, the stream in flight completes, exit 0', async () => {
    hold = gate();
    router = await start(20);
    const r = router;
    const { rest } = await streamInFlight(r.url);

    r.child.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${r.url}/health`)).status === 503, 10_000, 'health to turn 503');
    const refused = await postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'late' });
    expect(refused.status).toBe(503);
    expect(refused.json.error).toMatchObject({ type: 'service_unavailable', code: 'shutting_down' });
    expect(refused.headers.get('retry-after')).toBe('1');

    hold.open();
    const events = await rest;
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e).choices[0].text)).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect(await r.exited).toEqual({ code: 0, signal: null });
    expect(gen.aborted).toBe(0);
  }, 60_000);

  it('past shutdown.drain_timeout_s the remaining stream gets a final error event and is aborted upstream; exit 0', async () => {
    hold = gate();
    const abortedBefore = gen.aborted;
    router = await start(0.5);
    const r = router;
    const { rest } = await streamInFlight(r.url);
    r.child.kill('SIGTERM');
    const events = await rest;
    const last = JSON.parse(events.at(-1)!) as { error: { type: string; code: string } };
    expect(last.error).toMatchObject({ type: 'service_unavailable', code: 'shutting_down' });
    expect(await r.exited).toEqual({ code: 0, signal: null });
    await waitFor(() => gen.aborted === abortedBefore + 1, 5_000, 'the upstream stream aborted');
  }, 60_000);

  it('a second signal during the drain exits at once', async () => {
    hold = gate();
    router = await start(600);
    const r = router;
    const { rest } = await streamInFlight(r.url);
    // The stream breaks when the process exits.
    const broken = rest.then(() => false, () => true);
    r.child.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${r.url}/health`)).status === 503, 10_000, 'health to turn 503');
    r.child.kill('SIGINT');
    // The drain would wait 600 s: exiting within this test's timeout is the second signal's doing.
    expect(await r.exited).toEqual({ code: 1, signal: null });
    expect(await broken).toBe(true);
  }, 30_000);
});
