import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AbortHandle, HttpSessionProvider } from '../../src/http-session';
import { FakeWorker, json } from '../support/fake-worker';
import { waitFor } from '../support/router-app';

const OPTIONS = { connectionsPerServer: 4, connectTimeoutMs: 1000, keepAliveTimeoutMs: 1000, requestTimeoutMs: 5000, maxControlAnswerBytes: 1024 * 1024 };

describe('AbortHandle as the signal of upstream calls', () => {
  let worker: FakeWorker;
  let session: HttpSessionProvider;

  beforeAll(async () => {
    // '/hang' never answers; anything else answers at once.
    worker = await new FakeWorker((req, res) => {
      if (req.path !== '/hang') json(res, 200, { ok: true });
    }).start();
    session = new HttpSessionProvider(OPTIONS);
    session.onModuleInit();
  });

  afterAll(async () => {
    await session.onModuleDestroy();
    await worker.close();
  });

  it('aborts the calls in flight, which reach the worker as closed requests', async () => {
    const handle = new AbortHandle();
    const a = session.request({ origin: worker.url, path: '/hang', method: 'POST', body: '{}', signal: handle });
    const b = session.request({ origin: worker.url, path: '/hang', method: 'POST', body: '{}', signal: handle });
    await waitFor(() => worker.requests('/hang').length === 2, 5000, 'both calls at the worker');
    expect(handle.listenerCount).toBe(2);
    handle.abort();
    await expect(a).rejects.toThrow(/aborted/i);
    await expect(b).rejects.toThrow(/aborted/i);
    expect(handle.listenerCount).toBe(0);
    await waitFor(() => worker.aborted === 2, 5000, 'both requests closed at the worker');
  });

  it('leaves no listener once a call completed, and a later abort touches nothing', async () => {
    const handle = new AbortHandle();
    const res = await session.request({ origin: worker.url, path: '/ok', method: 'POST', body: '{}', signal: handle });
    expect(handle.listenerCount).toBe(1);
    expect(await res.body.json()).toEqual({ ok: true });
    // undici lets go of the signal when the body stream closes, a tick after it was read.
    await waitFor(() => handle.listenerCount === 0, 5000, 'the listener removed');
    handle.abort();
    expect(handle.aborted).toBe(true);
  });

  it('refuses to start a call on an already aborted handle', async () => {
    const handle = new AbortHandle();
    handle.abort(new Error('client gone'));
    await expect(session.request({ origin: worker.url, path: '/ok', method: 'POST', body: '{}', signal: handle })).rejects.toThrow('client gone');
  });

  it('gives a real AbortSignal on demand that follows the handle, made before or after the abort', () => {
    const early = new AbortHandle();
    const signal = early.signal;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal.aborted).toBe(false);
    early.abort();
    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).name).toBe('AbortError');

    const late = new AbortHandle();
    late.abort('bye');
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe('bye');
  });
});
