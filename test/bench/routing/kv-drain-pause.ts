import { fork } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type * as HttpSession from '../../../src/http-session';
import type * as KvCache from '../../../src/kv-cache';
import type { KvBlockTable, KvWorker } from '../../../src/kv-cache';
import type * as WorkerClientModule from '../../../src/worker-client';
import { runScript } from '../lib/run-script';

/**
 * The event-loop pauses of one large /kv_cache_events drain through the poller (read, decode,
 * sliced parse, sliced apply), in process, against a worker in a child process answering a
 * single stored event of `blocks` blocks (the hostile bench's drain). A setImmediate chain
 * beside the poll records every gap between turns: the longest ones, and how many pass 50 ms.
 * With an `--ab` build present (dist-bench/ab), its poller runs alternately with this tree's, in
 * the same process. Add --cpu-prof to node and --gaps-file=F (the long gaps' start and length
 * in the profile's microseconds) to see what runs in a long gap.
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/routing/kv-drain-pause.js [--blocks=1100000 --rounds=3]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const BLOCKS = Number(args.get('blocks') ?? 1_100_000);
const ROUNDS = Number(args.get('rounds') ?? 3);
const GAP_LOG: Array<[number, number]> | undefined = args.has('gaps-file') ? [] : undefined;

function drainOf(blocks: number): Buffer {
  const parts = ['[{"event_id":1,"data":{"type":"stored","parent_hash":null,"blocks":['];
  for (let i = 1; i <= blocks; i++) parts.push(`${i > 1 ? ',' : ''}{"type":"stored_block","block_hash":${i},"tokens":[]}`);
  parts.push(']},"window_size":32}]');
  return Buffer.from(parts.join(''));
}

/** The child: answers every /kv_cache_events with the drain, and says its port. */
async function serve(): Promise<void> {
  const drain = drainOf(BLOCKS);
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(drain);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.send?.((server.address() as AddressInfo).port);
  process.once('disconnect', () => process.exit(0));
  await new Promise(() => undefined);
}

interface Build {
  name: string;
  kv: typeof KvCache;
  session: HttpSession.HttpSessionProvider;
  client: WorkerClientModule.WorkerClient;
}

/** The router's modules of a bench build (dist-bench, or dist-bench/ab). */
function load(name: string, root: string): Build {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const kv = require(join(root, 'src/kv-cache')) as typeof KvCache;
  const http = require(join(root, 'src/http-session')) as typeof HttpSession;
  const wc = require(join(root, 'src/worker-client')) as typeof WorkerClientModule;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const session = new http.HttpSessionProvider(http.DEFAULT_HTTP_SESSION_OPTIONS);
  session.onModuleInit();
  return { name, kv, session, client: new wc.WorkerClient(session) };
}

function builds(): Build[] {
  const out = [load('after', resolve(__dirname, '../../..'))];
  const ab = resolve('dist-bench/ab');
  if (existsSync(join(ab, 'src/kv-cache/index.js'))) out.unshift(load('before', ab));
  return out;
}

class BenchWorker implements KvWorker {
  readonly kvHashAlgo = 'v1_block_key';
  constructor(
    readonly url: string,
    readonly table: KvBlockTable,
  ) {}
  kvTable(): KvBlockTable {
    return this.table;
  }
}

interface Gaps {
  turns: number;
  /** Gaps over 10 ms, in ms, in the order seen. */
  long: number[];
}

/** Runs `work` with a setImmediate chain beside it. */
async function gapsDuring(work: () => Promise<unknown>): Promise<Gaps & { ms: number }> {
  const gaps: Gaps = { turns: 0, long: [] };
  let running = true;
  const started = performance.now();
  let last = started;
  const tick = (): void => {
    const now = performance.now();
    if (now - last > 10) {
      gaps.long.push(Math.round(now - last));
      if (GAP_LOG) GAP_LOG.push([Number(process.hrtime.bigint() / 1000n) - Math.round((now - last) * 1000), Math.round((now - last) * 1000)]);
    }
    last = now;
    gaps.turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  const now = performance.now();
  if (now - last > 10) gaps.long.push(Math.round(now - last));
  return { ...gaps, ms: Math.round(now - started) };
}

async function main(): Promise<void> {
  const child = fork(__filename, [...process.argv.slice(2), '--serve=1'], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(m as number)));
  const url = `http://127.0.0.1:${port}`;
  const all = builds();
  console.log(`| round | build | blocks | ms | turns | longest gaps ms | gaps > 50 ms |\n|---|---|---|---|---|---|---|`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const b of all) {
      const workers = new b.kv.KvWorkers();
      const worker = new BenchWorker(url, new b.kv.KvBlockTable());
      workers.attach(worker);
      const poller = new b.kv.KvEventPoller(b.client, new b.kv.KvEventApplier(workers));
      const r = await gapsDuring(() => poller.pollOnce(url, 30_000));
      if (worker.table.size !== BLOCKS) throw new Error(`applied ${worker.table.size} blocks, expected ${BLOCKS}`);
      const longest = [...r.long].sort((x, y) => y - x).slice(0, 5);
      console.log(`| ${round} | ${b.name} | ${BLOCKS} | ${r.ms} | ${r.turns} | ${longest.join(', ')} | ${r.long.filter((g) => g > 50).length} |`);
    }
  }
  if (GAP_LOG) writeFileSync(args.get('gaps-file')!, JSON.stringify(GAP_LOG));
  for (const b of all) await b.session.onModuleDestroy();
  child.disconnect();
}

if (args.has('serve')) void serve();
else runScript(main);
