import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { contextHandler, generationHandler, type FakeHandler } from '../support/fake-worker';
import { waitFor } from '../support/router-app';
import { useFakeCluster } from '../support/router-cluster';
import { COUNTING, CountingPolicyModule, ledger } from './support/counting-policy';
import { expectSettled } from './support/leaks';

const body = { model: 'm', prompt: 'hello' };
const hang: FakeHandler = (_req, res) => void res.once('close', () => undefined);

/** A streamed answer that sends one event, then holds the stream open. */
const firstChunkThenHold: FakeHandler = (_req, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(`data: ${JSON.stringify({ id: 'g', object: 'text_completion', choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
};

/** A non-streamed answer cut off after its head and part of its body. */
const partialJsonThenHold: FakeHandler = (_req, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"id":"g","choices":[');
};

/**
 * Switching handlers per test keeps one router (and its sockets) for the whole file: a
 * disconnect must not leave anything behind that disturbs the next request.
 */
describe('client disconnect aborts upstream calls and finishes each reservation once', () => {
  const cluster = useFakeCluster({ context_servers: COUNTING, generation_servers: COUNTING }, { imports: [CountingPolicyModule] });
  afterAll(async () => {
    // Runs after the cluster closed: the router's connections to the workers are gone with the app.
    await waitFor(() => cluster.ctx.sockets.size === 0 && cluster.gen.sockets.size === 0, 5_000, 'worker sockets closed');
  });
  beforeEach(() => {
    ledger.reset();
    cluster.ctx.aborted = 0;
    cluster.gen.aborted = 0;
    cluster.ctx.received.length = 0;
    cluster.gen.received.length = 0;
  });
  afterEach(async () => {
    cluster.ctx.handler = contextHandler();
    cluster.gen.handler = generationHandler();
    await expectSettled(cluster.router);
  });

  /** Starts a request and aborts it once `when` holds; resolves after the client gave up. */
  async function leaveWhen(stream: boolean, when: () => boolean, onResponse?: (res: Response) => Promise<void>): Promise<void> {
    const client = new AbortController();
    const done = (async () => {
      try {
        const res = await fetch(`${cluster.router.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...body, stream }),
          signal: client.signal,
        });
        if (onResponse) await onResponse(res);
        await res.text();
      } catch {
        /* aborted */
      }
    })();
    await waitFor(when, 5_000, 'the moment to leave');
    client.abort();
    await done;
  }

  it('during the context call: the context call is aborted, generation never starts', async () => {
    cluster.ctx.handler = hang;
    await leaveWhen(false, () => cluster.ctx.requests('/v1/completions').length === 1);
    await waitFor(() => cluster.ctx.aborted === 1, 5_000, 'context call aborted upstream');
    expect(cluster.gen.requests('/v1/completions')).toHaveLength(0);
    await expectSettled(cluster.router);
    expect(ledger.picks.size).toBe(1);
  });

  it('between the phases (generation not yet answering): the generation call is aborted', async () => {
    cluster.gen.handler = hang;
    await leaveWhen(true, () => cluster.gen.requests('/v1/completions').length === 1);
    await waitFor(() => cluster.gen.aborted === 1, 5_000, 'generation call aborted upstream');
    expect(cluster.ctx.aborted).toBe(0);
    await expectSettled(cluster.router);
    expect(ledger.picks.size).toBe(2);
  });

  it('mid-stream: the upstream stream is aborted', async () => {
    cluster.gen.handler = firstChunkThenHold;
    let gotChunk = false;
    await leaveWhen(true, () => gotChunk, async (res) => {
      const reader = res.body!.getReader();
      await reader.read();
      gotChunk = true;
      await reader.read();
    });
    await waitFor(() => cluster.gen.aborted === 1, 5_000, 'generation stream aborted upstream');
    await expectSettled(cluster.router);
  });

  it('while a non-streamed answer is being read: the upstream call is aborted', async () => {
    cluster.gen.handler = partialJsonThenHold;
    await leaveWhen(false, () => cluster.gen.requests('/v1/completions').length === 1);
    await waitFor(() => cluster.gen.aborted === 1, 5_000, 'generation call aborted upstream');
    await expectSettled(cluster.router);
  });

  it('the router still serves normally afterwards', async () => {
    const res = await fetch(`${cluster.router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
  });
});
