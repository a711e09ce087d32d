import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_HTTP_SESSION_OPTIONS, HttpSessionProvider } from '../../../src/http-session';
import { WorkerClient } from '../../../src/worker-client';
import { runScript } from '../lib/run-script';

/**
 * The CPU one /kv_cache_events drain costs the router (a KV-aware router drains a worker after
 * every finished request): the worker client's raw-path drain against the same call through
 * the session's axios face, alternating, against a loopback worker answering `[]`. Figures
 * include the in-process worker's share, the same in both rows.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/kv-drain-cost.js [--calls=4000 --rounds=3]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const CALLS = Number(args.get('calls') ?? 4000);
const ROUNDS = Number(args.get('rounds') ?? 3);
const CONCURRENCY = 16;

async function main(): Promise<void> {
  const worker = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 }).end('[]'));
  });
  await new Promise<void>((resolve) => worker.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  const session = new HttpSessionProvider(DEFAULT_HTTP_SESSION_OPTIONS);
  session.onModuleInit();
  const client = new WorkerClient(session);
  const rows: Record<string, () => Promise<unknown>> = {
    'worker client (raw path)': () => client.drainKvEvents(url, 5000),
    'session axios face': () => session.axios.post(`${url}/kv_cache_events`, '', { timeout: 5000, responseType: 'text', transformResponse: (d: unknown) => d, headers: { 'content-type': 'application/json' } }),
  };
  const cpu: Record<string, number[]> = Object.fromEntries(Object.keys(rows).map((k) => [k, []]));
  const run = async (call: () => Promise<unknown>): Promise<void> => {
    let started = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (started++ < CALLS) await call();
    }));
  };
  for (let round = 0; round < ROUNDS; round++) {
    const names = round % 2 ? Object.keys(rows).reverse() : Object.keys(rows);
    for (const name of names) {
      await run(rows[name]); // warm-up
      const before = process.cpuUsage();
      await run(rows[name]);
      const used = process.cpuUsage(before);
      cpu[name].push((used.user + used.system) / CALLS);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  process.stdout.write(`| drain | cpu/call us (median of ${ROUNDS}) |\n|---|---|\n`);
  for (const name of Object.keys(rows)) process.stdout.write(`| ${name} | ${median(cpu[name]).toFixed(0)} |\n`);
  await session.onModuleDestroy();
  worker.close();
}

runScript(main);
