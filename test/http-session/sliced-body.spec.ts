import { afterEach, describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Test } from '@nestjs/testing';
import { HttpSessionModule, HttpSessionProvider } from '../../src/http-session';
import { BODY_SLICE_CHARS, SLICED_BODY_CHARS } from '../../src/http-session/sliced-body';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { expectSettled, timerCount } from '../reliability/support/leaks';

/** A loopback HTTP server whose requests `handle` answers; its open sockets are counted. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; sockets: Set<Socket>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(handle);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url, sockets,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The whole request body as bytes. */
async function bytesOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('long worker bodies go out in slices', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('writes a long text as slices the socket encodes, with the Content-Length of its bytes, never splitting a surrogate pair', async () => {
    let got: { length?: string; body: Buffer } | undefined;
    const worker = await serve((req, res) => {
      void bytesOf(req).then((body) => {
        got = { length: req.headers['content-length'], body };
        res.end('{}');
      });
    });
    cleanups.push(() => worker.close());
    const moduleRef = await Test.createTestingModule({ imports: [HttpSessionModule.register({ requestTimeoutMs: 30_000 })] }).compile();
    await moduleRef.init();
    cleanups.push(() => moduleRef.close());
    // Multi-byte text, with an emoji (a surrogate pair) straddling every slice boundary.
    const filler = (n: number): string => 'é€ text '.repeat(Math.ceil(n / 8)).slice(0, n);
    let body = '';
    while (body.length < 4 * SLICED_BODY_CHARS) body += filler(BODY_SLICE_CHARS - 1 - (body.length % BODY_SLICE_CHARS)) + '🚀';
    const chunks: number[] = [];
    const onChunk = (message: unknown): void => void chunks.push((message as { chunk: string | Uint8Array }).chunk.length);
    subscribe('undici:request:bodyChunkSent', onChunk);
    try {
      const res = await moduleRef.get(HttpSessionProvider).request({ origin: worker.url, path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
    } finally {
      unsubscribe('undici:request:bodyChunkSent', onChunk);
    }
    expect(got?.length).toBe(String(Buffer.byteLength(body)));
    expect(got?.body.equals(Buffer.from(body))).toBe(true);
    expect(body.charCodeAt(BODY_SLICE_CHARS - 1)).toBe('🚀'.charCodeAt(0));
    expect(chunks.length).toBeGreaterThanOrEqual(Math.floor(body.length / BODY_SLICE_CHARS));
    expect(Math.max(...chunks)).toBeLessThanOrEqual(BODY_SLICE_CHARS);
  });

  /**
   * A worker that refuses the request from its head, before reading the body: `close` then
   * drops the connection (as a server does for a 413), else Node reads the rest of the body
   * and keeps the connection for the next request. A short body is answered as a context worker.
   */
  async function earlyAnswering(status: number, close: boolean, refused: Socket[]): Promise<Awaited<ReturnType<typeof serve>>> {
    return serve((req, res) => {
      if (req.method === 'GET' || req.url === '/kv_cache_events') return void res.end(req.url === '/server_info' ? '{}' : req.url === '/kv_cache_events' ? '[]' : '');
      if (Number(req.headers['content-length']) < SLICED_BODY_CHARS) {
        return void bytesOf(req).then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(contextAnswer)));
      }
      refused.push(req.socket);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the prompt is too long', type: 'invalid_request_error' } }), () => {
        if (close) req.socket.destroy();
      });
    });
  }

  const contextAnswer = {
    id: 'c', object: 'text_completion', model: 'm',
    choices: [{ index: 0, text: '', finish_reason: 'length', disaggregated_params: { request_type: 'context_only', ctx_request_id: 1, first_gen_tokens: [1], encoded_opaque_state: 'eA==' } }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };

  it.each([
    { status: 413, close: true, what: 'drops the connection' },
    { status: 400, close: false, what: 'keeps the connection' },
  ])('a context worker that answers $status before reading a long body and $what: the client gets that answer, nothing stays held', async ({ status, close }) => {
    const refused: Socket[] = [];
    const ctx = await earlyAnswering(status, close, refused);
    cleanups.push(() => ctx.close());
    const gen = await new FakeWorker(generationHandler()).start();
    cleanups.push(() => gen.close());
    const router: RunningRouter = await startRouter({ max_retries: 0, health: { interval_s: 600 }, context_servers: { urls: [ctx.url] }, generation_servers: { urls: [gen.url] } });
    cleanups.push(() => router.close());
    const timers = timerCount();
    const prompt = 'lorem ipsum dolor sit amet '.repeat(Math.ceil((8 * SLICED_BODY_CHARS) / 27));
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt, max_tokens: 1 });
    expect(res.status).toBe(status);
    expect((res.json.error as { message: string }).message).toContain('the prompt is too long');
    await expectSettled(router);
    expect(refused).toHaveLength(1);
    // Dropped: gone from the worker's sockets (the router closed its end too).
    if (close) await waitFor(() => !ctx.sockets.has(refused[0]), 5_000, 'the dropped connection closed');
    await waitFor(() => timerCount() <= timers, 5_000, 'no timer left behind');
    // The pool is not left in a broken state: the next request to the same worker is answered.
    const next = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'small', max_tokens: 1 });
    expect(next.status).toBe(200);
    await expectSettled(router);
  });
});
