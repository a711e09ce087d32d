import { Pool } from 'undici';
import type { LoadOptions, LoadResult } from '../lib/load';

/**
 * Fixed-rate load driver: `rate` requests per second spread over up to `connections` keep-alive
 * connections, latency timed per request in microseconds. Closed-loop drivers (wrk, autocannon)
 * at 32 connections measure queueing behind the slowest stage; at a rate the proxy sustains,
 * this measures what each hop adds. Bounded by count and time.
 */
const o = JSON.parse(process.argv[2]) as LoadOptions & { rate: number };
const url = new URL(o.url);
const pool = new Pool(url.origin, { connections: o.connections, pipelining: 1 });
const total = Math.max(1, Math.round(o.rate * o.seconds));
const request = { path: url.pathname, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: o.body };
const latenciesUs = new Float64Array(total);
let sent = 0;
/** Requests answered (their latencies recorded) and failed; together, the requests done. */
let recorded = 0;
let errors = 0;
let non2xx = 0;

function fire(): void {
  const started = process.hrtime.bigint();
  pool
    .request(request)
    .then(async (res) => {
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
      latenciesUs[recorded++] = Number(process.hrtime.bigint() - started) / 1000;
    })
    .catch(() => {
      errors++;
    })
    .finally(() => {
      if (recorded + errors === total) finish();
    });
}

/** Opens every connection and warms this process' JIT before timing: new sockets are not what is measured. */
async function openConnections(): Promise<void> {
  for (let round = 0; round < 8; round++) {
    await Promise.all(
      Array.from({ length: o.connections }, () =>
        pool.request(request).then((res) => res.body.dump()),
      ),
    );
  }
}

let t0 = 0;
const intervalMs = 1000 / o.rate;
const deadline = setTimeout(finish, (o.seconds + 20) * 1000);

/** Sends every request whose slot has come, then sleeps until the next slot. */
function tick(): void {
  const due = Math.min(total, Math.floor((performance.now() - t0) / intervalMs) + 1);
  while (sent < due) {
    sent++;
    fire();
  }
  if (sent < total) setTimeout(tick, Math.max(0, t0 + sent * intervalMs - performance.now()));
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

let finished = false;
function finish(): void {
  if (finished) return;
  finished = true;
  clearTimeout(deadline);
  const seconds = (performance.now() - t0) / 1000;
  const done = recorded + errors;
  const ok = latenciesUs.slice(0, recorded).sort();
  const result: LoadResult = {
    requests: done,
    seconds,
    rps: done / seconds,
    p50Ms: percentile(ok, 50) / 1000,
    p99Ms: percentile(ok, 99) / 1000,
    errors: errors + (total - done),
    non2xx,
  };
  void pool.destroy().finally(() => process.send?.(result, () => process.exit(0)));
}

openConnections().then(
  () => {
    t0 = performance.now();
    tick();
  },
  (err: unknown) => {
    process.stderr.write(`paced driver: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
