import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Global, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { APP_CONFIG, buildConfig } from '../../src/config';
import { HttpSessionModule } from '../../src/http-session';
import {
  KV_EVENT_PUBLISHER,
  KV_METRICS,
  KV_POLL_OWNERSHIP,
  KvCacheModule,
  KvEventApplier,
  KvEventPoller,
  KvWorkers,
  parseKvEventsFast,
  serializeKvEvents,
  type KvEventPublisher,
  type KvMetrics,
  type KvPollOwnership,
} from '../../src/kv-cache';
import { ServerState } from '../../src/servers';
import { FakeWorker } from '../support/fake-worker';

const BIG = 18_000_000_000_000_000_001n; // beyond 2^53: must survive the trip
const EVENTS = serializeKvEvents([
  { event_id: 1, data: { type: 'created', num_blocks_per_cache_level: [8, 0] } },
  { event_id: 2, data: { type: 'stored', parent_hash: null, blocks: [{ type: 'stored_block', block_hash: BIG, tokens: [] }] } },
]);

interface Room {
  app: TestingModule;
  published: Array<[string, readonly unknown[], boolean]>;
  errors: string[];
  state: ServerState;
}

/** The KV room in a real Nest container over a real session, with recording seams (provided globally, as router replicas do). */
async function room(url: string, owns = true, maxKvEventsBytes?: number): Promise<Room> {
  const published: Room['published'] = [];
  const errors: string[] = [];
  const metrics: KvMetrics = { kvEventsApplied: () => undefined, kvPollError: (u) => errors.push(u) };
  const ownership: KvPollOwnership = { owns: () => owns };
  const publisher: KvEventPublisher = { publish: (u, events, restarted) => published.push([u, events, restarted]) };
  @Global()
  @Module({
    providers: [
      { provide: KV_METRICS, useValue: metrics },
      { provide: KV_POLL_OWNERSHIP, useValue: ownership },
      { provide: KV_EVENT_PUBLISHER, useValue: publisher },
      ...(maxKvEventsBytes ? [{ provide: APP_CONFIG, useValue: buildConfig({ generation_servers: { urls: [url] }, limits: { max_kv_events_bytes: maxKvEventsBytes } }) }] : []),
    ],
    exports: [KV_METRICS, KV_POLL_OWNERSHIP, KV_EVENT_PUBLISHER, ...(maxKvEventsBytes ? [APP_CONFIG] : [])],
  })
  class RecordingSeams {}
  const app = await Test.createTestingModule({ imports: [HttpSessionModule.register(), RecordingSeams, KvCacheModule] }).compile();
  await app.init();
  const state = new ServerState({ url, role: 'generation', source: 'config' });
  app.get(KvWorkers).attach(state);
  return { app, published, errors, state };
}

describe('KvEventPoller', () => {
  const closing: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const c of closing.splice(0).reverse()) await c.close();
  });

  it('drains an owned worker, applies, then publishes; another replica applies the published events once', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    worker.kvEvents = () => EVENTS;
    const owner = await room(worker.url);
    const follower = await room(worker.url, false);
    closing.push(owner.app, follower.app);

    expect(await owner.app.get(KvEventPoller).pollOnce(worker.url, 2000)).toEqual({ ok: true, applied: 2 });
    expect(owner.state.kvTable().has(BIG)).toBe(true);
    expect(owner.published.map(([u, , restarted]) => [u, restarted])).toEqual([[worker.url, false]]);

    // The follower owns nothing: its poll never reaches the worker.
    await follower.app.get(KvEventPoller).poll(worker.url, 2000);
    expect(worker.requests('/kv_cache_events')).toHaveLength(1);
    // Over a bus the events travel as JSON text, read back with all 64 bits.
    const wire = parseKvEventsFast(serializeKvEvents(owner.published[0][1]));
    const applier = follower.app.get(KvEventApplier);
    expect(applier.apply(worker.url, wire)).toBe(2);
    expect(applier.apply(worker.url, wire)).toBe(0);
    expect(new Set(follower.state.kvTable().keys())).toEqual(new Set(owner.state.kvTable().keys()));
    expect(follower.state.kvTable().capacity).toBe(8);
  });

  it('takes ids going backwards in its own drain for a restarted worker', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    const r = await room(worker.url);
    closing.push(r.app);
    const poller = r.app.get(KvEventPoller);
    worker.kvEvents = () => EVENTS;
    await poller.pollOnce(worker.url, 2000);
    worker.kvEvents = () => serializeKvEvents([
      { event_id: 1, data: { type: 'created', num_blocks_per_cache_level: [8, 0] } },
      { event_id: 2, data: { type: 'stored', parent_hash: null, blocks: [{ type: 'stored_block', block_hash: 5n, tokens: [] }] } },
    ]);
    expect(await poller.pollOnce(worker.url, 2000)).toEqual({ ok: true, applied: 2 });
    expect([...r.state.kvTable().keys()]).toEqual([5n]);
    // The publisher is told, so other replicas restart the worker's ids too.
    expect(r.published.map(([, , restarted]) => restarted)).toEqual([false, true]);
  });

  it('polls every worker and publishes nowhere without seams (a single router)', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    worker.kvEvents = () => EVENTS;
    const app = await Test.createTestingModule({ imports: [HttpSessionModule.register(), KvCacheModule] }).compile();
    await app.init();
    closing.push(app);
    const state = new ServerState({ url: worker.url, role: 'generation', source: 'config' });
    app.get(KvWorkers).attach(state);
    await app.get(KvEventPoller).poll(worker.url, 2000);
    expect(worker.requests('/kv_cache_events')).toHaveLength(1);
    expect(state.kvTable().has(BIG)).toBe(true);
  });

  it('counts a failed poll and leaves the tables as they were', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    worker.kvEvents = () => 'not json at all';
    const r = await room(worker.url);
    closing.push(r.app);
    const outcome = await r.app.get(KvEventPoller).pollOnce(worker.url, 2000);
    expect(outcome.ok).toBe(false);
    expect(r.errors).toEqual([worker.url]);
    expect(r.published).toHaveLength(0);
    expect(r.state.kvBlocksKnown).toBe(0);
    // A dead worker too.
    await worker.close();
    expect((await r.app.get(KvEventPoller).pollOnce(worker.url, 2000)).ok).toBe(false);
    expect(r.errors).toEqual([worker.url, worker.url]);
  });

  it('coalesces polls asked for while one runs into one follow-up', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    const r = await room(worker.url);
    closing.push(r.app);
    const poller = r.app.get(KvEventPoller);
    const polls = [poller.poll(worker.url, 2000), poller.poll(worker.url, 2000), poller.poll(worker.url, 2000)];
    expect(poller.isPolling(worker.url)).toBe(true);
    await Promise.all(polls);
    expect(poller.isPolling(worker.url)).toBe(false);
    expect(worker.requests('/kv_cache_events')).toHaveLength(2);
  });

  it('starts the follow-up no sooner than the gap after the poll before it, and a worker not polled within the gap is polled at once', async () => {
    const { worker, poller, sentAt } = await timedPolls(closing);
    const GAP = 300;
    const asked = performance.now();
    const burst = Array.from({ length: 20 }, () => poller.poll(worker.url, 2000, GAP));
    await Promise.all(burst);
    expect(sentAt).toHaveLength(2);
    // Timers never fire early; the worker reads the second request after the router sent it.
    expect(sentAt[1] - asked).toBeGreaterThanOrEqual(GAP - 1);
    // Once the gap since the last poll's start is over (time itself is what is waited for), the next finish polls without waiting another.
    await new Promise((resolve) => setTimeout(resolve, GAP));
    const idleAsk = performance.now();
    await poller.poll(worker.url, 2000, GAP);
    expect(sentAt).toHaveLength(3);
    expect(sentAt[2] - idleAsk).toBeLessThan(GAP);
  });

  it('makes a finish that comes after the last poll came back, but within the gap of its start, wait for the gap: one poll for all such finishes', async () => {
    const { worker, poller, sentAt } = await timedPolls(closing);
    const GAP = 300;
    const asked = performance.now();
    await poller.poll(worker.url, 2000, GAP);
    expect(sentAt).toHaveLength(1);
    // Finishes one after the other, each once the drain before it is done (a steady stream).
    const later = [poller.poll(worker.url, 2000, GAP)];
    expect(poller.isPolling(worker.url)).toBe(true);
    later.push(poller.poll(worker.url, 2000, GAP), poller.poll(worker.url, 2000, GAP));
    await Promise.all(later);
    expect(sentAt).toHaveLength(2);
    expect(sentAt[1] - asked).toBeGreaterThanOrEqual(GAP - 1);
    expect(poller.isPolling(worker.url)).toBe(false);
  });

  it('sends no follow-up once the app closes during the gap, and leaves no timer behind', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    const r = await room(worker.url);
    const poller = r.app.get(KvEventPoller);
    const first = poller.poll(worker.url, 2000, 60_000);
    void poller.poll(worker.url, 2000, 60_000);
    await waitForRequests(worker, 1);
    const closed = r.app.close();
    // A minute's gap: only the close can end this poll's wait.
    await first;
    await closed;
    expect(worker.requests('/kv_cache_events')).toHaveLength(1);
    expect(poller.isPolling(worker.url)).toBe(false);
    await poller.poll(worker.url, 2000);
    expect(worker.requests('/kv_cache_events')).toHaveLength(1);
  });
});

/** A poller and a fake worker answering `[]`, with when the worker read each drain; both closed through `closing`. */
async function timedPolls(closing: Array<{ close(): Promise<unknown> }>): Promise<{ worker: FakeWorker; poller: KvEventPoller; sentAt: number[] }> {
  const worker = await new FakeWorker(() => undefined).start();
  closing.push(worker);
  const r = await room(worker.url);
  closing.push(r.app);
  const sentAt: number[] = [];
  worker.kvEvents = () => {
    sentAt.push(performance.now());
    return '[]';
  };
  return { worker, poller: r.app.get(KvEventPoller), sentAt };
}

async function waitForRequests(worker: FakeWorker, n: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (worker.requests('/kv_cache_events').length < n) {
    if (Date.now() > deadline) throw new Error(`fewer than ${n} polls reached the worker`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('KvEventPoller against hostile drains', () => {
  const closing: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const c of closing.splice(0).reverse()) await c.close();
  });

  it('drops a drain over limits.max_kv_events_bytes unread: the view starts empty (here and for the replicas) and fills again', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    const r = await room(worker.url, true, 16 * 1024);
    closing.push(r.app);
    const poller = r.app.get(KvEventPoller);
    worker.kvEvents = () => EVENTS;
    await poller.pollOnce(worker.url, 2000);
    expect(r.state.kvTable().has(BIG)).toBe(true);

    const many = Array.from({ length: 2_000 }, (_, i) => ({ type: 'stored_block' as const, block_hash: BigInt(1_000 + i), tokens: [] }));
    worker.kvEvents = () => serializeKvEvents([{ event_id: 3, data: { type: 'stored', parent_hash: null, blocks: many } }]);
    const outcome = await poller.pollOnce(worker.url, 2000);
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/larger than 16384 bytes/);
    expect(r.errors).toEqual([worker.url]);
    expect(r.state.kvTable().size).toBe(0);
    // The known capacity stays; the replicas get the same reset.
    expect(r.state.kvTable().capacity).toBe(8);
    const reset = r.published.at(-1)!;
    expect(reset[1]).toEqual([{ event_id: -1, data: { type: 'created' } }]);

    worker.kvEvents = () => serializeKvEvents([{ event_id: 4, data: { type: 'stored', parent_hash: null, blocks: [{ type: 'stored_block', block_hash: 7n, tokens: [] }] } }]);
    expect(await poller.pollOnce(worker.url, 2000)).toEqual({ ok: true, applied: 1 });
    expect([...r.state.kvTable().keys()]).toEqual([7n]);
  });

  it('applies a huge drain in slices, letting the event loop run between them, with the same result as at once', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    const r = await room(worker.url);
    closing.push(r.app);
    const blocks = Array.from({ length: 90_000 }, (_, i) => ({ type: 'stored_block' as const, block_hash: BigInt(i + 1), tokens: [] }));
    worker.kvEvents = () => serializeKvEvents([
      { event_id: 1, data: { type: 'created', num_blocks_per_cache_level: [100_000, 0] } },
      { event_id: 2, data: { type: 'stored', parent_hash: null, blocks } },
      { event_id: 3, data: { type: 'removed', block_hashes: blocks.slice(0, 30_000).map((b) => b.block_hash) } },
    ]);
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      expect(await r.app.get(KvEventPoller).pollOnce(worker.url, 10_000)).toEqual({ ok: true, applied: 3 });
    } finally {
      clearInterval(ticker);
    }
    expect(turns).toBeGreaterThan(0);
    expect(r.state.kvTable().size).toBe(60_000);
    expect(r.state.kvTable().has(30_001n)).toBe(true);
    expect(r.state.kvTable().has(1n)).toBe(false);
    expect(r.app.get(KvEventApplier).lastEventId(worker.url)).toBe(3);
  });

  it('parses a large drain in slices too: the event loop turns between the answer read and the first block applied', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    closing.push(worker);
    const r = await room(worker.url);
    closing.push(r.app);
    const count = 300_000;
    const parts = ['[{"event_id":1,"data":{"type":"stored","parent_hash":null,"blocks":['];
    for (let i = 1; i <= count; i++) parts.push(`${i > 1 ? ',' : ''}{"type":"stored_block","block_hash":${BIG + BigInt(i)},"tokens":[]}`);
    parts.push(']},"window_size":32}]');
    const text = parts.join('');
    worker.kvEvents = () => text;
    // From the moment the session has read the whole answer (undici's own event), turns of the
    // event loop are counted until the table holds a block: a parse in one go leaves none.
    let turns = -1;
    const table = r.state.kvTable();
    const countTurns = (): void => {
      if (table.size > 0) return;
      turns++;
      setImmediate(countTurns);
    };
    const onAnswerRead = (message: unknown): void => {
      const path = (message as { request?: { path?: string } }).request?.path;
      if (path?.endsWith('/kv_cache_events') && turns < 0) {
        turns = 0;
        setImmediate(countTurns);
      }
    };
    subscribe('undici:request:trailers', onAnswerRead);
    try {
      expect(await r.app.get(KvEventPoller).pollOnce(worker.url, 20_000)).toEqual({ ok: true, applied: 1 });
    } finally {
      unsubscribe('undici:request:trailers', onAnswerRead);
    }
    expect(turns).toBeGreaterThan(20);
    expect(table.size).toBe(count);
    expect(table.has(BIG + BigInt(count))).toBe(true);
    // The replicas are handed what the one-go parse gives.
    expect(r.published).toHaveLength(1);
    expect(r.published[0][1]).toEqual(parseKvEventsFast(text));
  });
});
