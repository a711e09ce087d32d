import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BASE_CONFIG, post, quantile, runAttacks, summary, type Attack } from './attack-harness';
import { onWorkers, startPlainWorker, type PlainWorker } from './scripted-workers';

/**
 * Router RSS and /health latency under a hostile context worker: a `/kv_cache_events` answer of
 * 1.5 GB, `/health` answers of 1.4 GB, and one drain of 2M (or 1.1M) stored blocks (with a
 * client's request latency while it is read and applied). The worker answers inference calls as a real one would;
 * its hostile answer starts with the attack. The context pool routes KV-aware (polling events
 * after each request).
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/hostile/worker-attacks.js [--attacks=...]
 */
const MB = 1024 * 1024;

interface HostileMode {
  /** /kv_cache_events answers this many bytes of events, as fast as the router reads them. */
  kvEventsBytes?: number;
  /** The next /kv_cache_events answer is this body, once. */
  drainOnce?: Buffer;
  /** /health answers this many bytes. */
  healthBytes?: number;
}

interface HostileWorker {
  hostPort: string;
  mode: HostileMode;
  /** Hostile answers the worker started, and how many ended (sent whole or cut by the router). */
  hostile: { started: number; ended: number; bytesSent: number };
}

interface WorkerSet {
  ctx: HostileWorker;
  gen: PlainWorker;
}

const EVENT = Buffer.from('{"event_id":1,"data":{"type":"removed","block_hashes":[1]},"window_size":32},'.repeat(16_384));

/** `bytes` of `piece` repeated between `head` and `tail`, written as fast as the reader takes them. */
function pump(w: HostileWorker, res: ServerResponse, head: string, piece: Buffer, bytes: number, tail: string): void {
  w.hostile.started++;
  res.once('close', () => w.hostile.ended++);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write(head);
  let sent = 0;
  const more = (): void => {
    while (!res.destroyed && sent < bytes) {
      sent += piece.length;
      w.hostile.bytesSent += piece.length;
      if (!res.write(piece)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end(tail);
  };
  more();
}

async function startHostileWorker(): Promise<HostileWorker> {
  const plain = await startPlainWorker();
  const w: HostileWorker = { hostPort: '', mode: {}, hostile: { started: 0, ended: 0, bytesSent: 0 } };
  const server = createServer((req, res) => {
    if (req.url === '/health' && w.mode.healthBytes) return pump(w, res, '', EVENT, w.mode.healthBytes, '');
    if (req.url === '/kv_cache_events') {
      req.resume();
      if (w.mode.kvEventsBytes) return pump(w, res, '[', EVENT, w.mode.kvEventsBytes, '{"event_id":2,"data":{"type":"removed","block_hashes":[2]}}]');
      const drain = w.mode.drainOnce;
      w.mode.drainOnce = undefined;
      if (drain) {
        w.hostile.started++;
        res.once('close', () => w.hostile.ended++);
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(drain);
      }
    }
    // Everything else as a plain worker answers it.
    plain.server.emit('request', req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  w.hostPort = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return w;
}

/** One drain of `blocks` stored blocks in a single event (block hashes 1..blocks). */
function drainOf(blocks: number): Buffer {
  const parts: string[] = ['[{"event_id":1,"data":{"type":"stored","parent_hash":null,"blocks":['];
  for (let i = 1; i <= blocks; i++) parts.push(`${i > 1 ? ',' : ''}{"type":"stored_block","block_hash":${i},"tokens":[]}`);
  parts.push(']},"window_size":32}]');
  return Buffer.from(parts.join(''));
}

const kvRouter = { context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32 } } };
const chat = (i: number): Record<string, unknown> => ({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: `hello ${i}` }] });
const postChat = (url: string, i: number, signal: AbortSignal): Promise<string> => post(`${url}/v1/chat/completions`, chat(i), signal);

/** Waits until the worker's hostile answers have all ended (at least `count`), or the deadline. */
async function hostileEnded(w: HostileWorker, count: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted && (w.hostile.ended < count || w.hostile.ended < w.hostile.started)) await new Promise((r) => setTimeout(r, 50));
}

const ended = (w: HostileWorker): string => `${w.hostile.ended} hostile answer(s) ended, ${Math.round(w.hostile.bytesSent / MB)} MB sent`;

const ATTACKS: Attack<WorkerSet>[] = [
  {
    name: '/kv_cache_events answer of 1.5 GB',
    config: (w) => onWorkers({ ctx: w.ctx.hostPort, gen: w.gen.hostPort }, { ...BASE_CONFIG, ...kvRouter }),
    run: async ({ url, signal, workers }) => {
      const w = workers.ctx;
      w.hostile = { started: 0, ended: 0, bytesSent: 0 };
      w.mode = { kvEventsBytes: 1536 * MB };
      const first = await postChat(url, 0, signal);
      await hostileEnded(w, 1, signal);
      w.mode = {};
      return [`request ${first}`, ended(w), `next request ${await postChat(url, 1, signal)}`];
    },
  },
  {
    name: '/health answers of 1.4 GB (checks every 2 s)',
    config: (w) => onWorkers({ ctx: w.ctx.hostPort, gen: w.gen.hostPort }, { ...BASE_CONFIG, health: { interval_s: 2, startup_wait_s: 10 } }),
    run: async ({ url, signal, workers }) => {
      const w = workers.ctx;
      w.hostile = { started: 0, ended: 0, bytesSent: 0 };
      w.mode = { healthBytes: 1434 * MB };
      // Three checks of the worker, each answered with 1.4 GB.
      await hostileEnded(w, 3, signal);
      w.mode = {};
      return [ended(w), `request ${await postChat(url, 0, signal)}`];
    },
  },
  ...[2_000_000, 1_100_000].map((blocks): Attack<WorkerSet> => ({
    // 2M blocks are about 110 MB, over the after build's 64 MiB limits.max_kv_events_bytes (dropped
    // unread); 1.1M blocks, about 63 MB, fit under it and are parsed and applied.
    name: `one drain of ${blocks / 1e6}M blocks, a client's latency`,
    config: (w) => onWorkers({ ctx: w.ctx.hostPort, gen: w.gen.hostPort }, { ...BASE_CONFIG, ...kvRouter }),
    run: async ({ url, signal, workers }) => {
      const w = workers.ctx;
      w.hostile = { started: 0, ended: 0, bytesSent: 0 };
      w.mode = { drainOnce: drainOf(blocks) };
      const t0 = performance.now();
      const trigger = postChat(url, 0, signal).then((s) => ({ s, ms: performance.now() - t0 }));
      // Small requests one after another while the drain is read and applied (15 s).
      const latencies: number[] = [];
      const statuses: string[] = [];
      for (let i = 1; performance.now() - t0 < 15_000 && !signal.aborted; i++) {
        const t = performance.now();
        statuses.push(await postChat(url, i, signal));
        latencies.push(performance.now() - t);
      }
      const first = await trigger;
      latencies.sort((a, b) => a - b);
      return [`trigger ${first.s} in ${Math.round(first.ms)} ms`, ...summary(statuses), `client p50 ${quantile(latencies, 0.5)} ms, max ${Math.round(latencies[latencies.length - 1] ?? NaN)} ms`];
    },
  })),
];

async function main(): Promise<void> {
  const ctx = await startHostileWorker();
  const gen = await startPlainWorker();
  await runAttacks(ATTACKS, { ctx, gen });
  gen.server.close();
  process.exit(0);
}

void main();
