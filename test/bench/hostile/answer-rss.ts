import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { startRouter, type RouterProcess } from './router-process';

/**
 * Router RSS under hostile worker answers (each request must end in 502 answer_too_large):
 * - a context answer of 4 GiB, sent as fast as the router reads it;
 * - five concurrent 200 MB answers to requests asking for max_tokens 1e6 (the 64 MiB ceiling);
 * - three identical bursts of 100 concurrent oversized answers (no max_tokens: a limit of about
 *   34 MiB each). After each burst: RSS, then the router's heap, external and array-buffer
 *   memory after a full GC (the memory probe), and RSS again. Live memory back to its idle level
 *   while RSS stays up and does not climb from burst to burst is memory the allocator keeps for
 *   reuse, not a leak.
 * The router runs as its own process; its RSS is sampled every 20 ms.
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/hostile/answer-rss.js
 *
 * With an `--ab` build present (dist-bench/ab), each case runs against it first ("before").
 *
 * `--env=NAME=VALUE,...` adds to the router's environment (e.g. glibc's MALLOC_ARENA_MAX);
 * `--cases=burst` runs only the cases whose name contains one of the words.
 */
const CHUNK = Buffer.alloc(1 << 20, 0x20);
const BURSTS = 3;
const BURST_REQUESTS = 100;
const BURST_ANSWER_BYTES = 48 * 1024 ** 2;

/** An answer of `bytes` bytes that starts like JSON, written as fast as the reader takes it. */
function bigAnswer(res: ServerResponse, bytes: number): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"choices":[{"text":"');
  let sent = 0;
  const pump = (): void => {
    while (!res.destroyed && sent < bytes) {
      sent += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', pump);
    }
    if (!res.destroyed) res.end('"}]}');
  };
  pump();
}

/**
 * RSS after glibc's malloc_trim(0) in the router (through gdb, when installed): memory it gives
 * back was free in the allocator's heap, kept for reuse, not held by live objects.
 */
function mallocTrim(router: RouterProcess): number | string {
  try {
    execFileSync('gdb', ['-p', String(router.pid), '-batch', '-ex', 'call (int) malloc_trim(0)'], { stdio: 'ignore', timeout: 60_000 });
    return router.rssMb();
  } catch (err) {
    return `not measured: ${(err as Error).message.split('\n')[0]}`;
  }
}

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

async function main(): Promise<void> {
  let answerBytes = 0;
  // One router at a time reads from this worker: the case sets the answer size.
  const worker = createServer((req, res) => {
    if (req.url === '/health') return void res.end();
    if (req.url === '/server_info') return void res.end('{}');
    req.resume();
    req.once('end', () => bigAnswer(res, answerBytes));
  });
  await new Promise<void>((r) => worker.listen(0, '127.0.0.1', r));
  const workerUrl = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  const env = Object.fromEntries((arg('env')?.split(',') ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const only = arg('cases')?.split(',');
  const config = {
    max_retries: 0, context_servers: { urls: [workerUrl] }, generation_servers: { urls: [workerUrl] },
    health: { interval_s: 600, startup_wait_s: 10 }, logging: { level: 'error' },
  };

  const send = async (router: RouterProcess, concurrent: number, maxTokens: number | undefined): Promise<string[]> => {
    const statuses = await Promise.all(Array.from({ length: concurrent }, async () => {
      const body = { model: 'm', prompt: 'hi', ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }) };
      const res = await fetch(`${router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as { error?: { code?: string } };
      return `${res.status} ${json.error?.code ?? ''}`;
    }));
    const counts = new Map<string, number>();
    for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
    return [...counts].map(([s, n]) => `${n} x ${s}`);
  };
  const sampled = async <T>(router: RouterProcess, work: () => Promise<T>): Promise<{ result: T; ms: number; peakRssMb: number }> => {
    let peak = router.rssMb();
    const sampler = setInterval(() => (peak = Math.max(peak, router.rssMb())), 20);
    const started = Date.now();
    const result = await work();
    clearInterval(sampler);
    return { result, ms: Date.now() - started, peakRssMb: Math.max(peak, router.rssMb()) };
  };

  const CASES: { name: string; run(router: RouterProcess): Promise<Record<string, unknown>[]> }[] = [
    {
      name: 'one 4 GiB context answer (max_tokens 16)',
      run: async (router) => {
        answerBytes = 4 * 1024 ** 3;
        const { result, ms, peakRssMb } = await sampled(router, () => send(router, 1, 16));
        return [{ statuses: result, ms, peakRssMb }];
      },
    },
    {
      name: 'five concurrent 200 MB answers (max_tokens 1e6: 64 MiB ceiling)',
      run: async (router) => {
        answerBytes = 200 * 1024 ** 2;
        const { result, ms, peakRssMb } = await sampled(router, () => send(router, 5, 1_000_000));
        return [{ statuses: result, ms, peakRssMb }];
      },
    },
    {
      name: `${BURSTS} bursts of ${BURST_REQUESTS} concurrent ${BURST_ANSWER_BYTES / 1024 ** 2} MiB answers (no max_tokens)`,
      run: async (router) => {
        answerBytes = BURST_ANSWER_BYTES;
        const rows: Record<string, unknown>[] = [{ burst: 'idle', ...(await router.memoryMb()) }];
        for (let i = 1; i <= BURSTS; i++) {
          const { result, ms, peakRssMb } = await sampled(router, () => send(router, BURST_REQUESTS, undefined));
          const rssAfter = router.rssMb();
          const { rss: rssAfterGc, ...live } = await router.memoryMb();
          rows.push({ burst: i, statuses: result, ms, peakRssMb, rssAfter, rssAfterGc, ...live, resident: router.residentByKindMb() });
        }
        rows.push({ burst: 'after glibc malloc_trim(0)', rssMb: mallocTrim(router) });
        return rows;
      },
    },
  ];

  const builds: [string, string][] = [['this tree', resolve('dist-bench/src/main.js')]];
  if (existsSync(resolve('dist-bench/ab/src/main.js'))) builds.unshift(['before (--ab)', resolve('dist-bench/ab/src/main.js')]);
  for (const c of CASES.filter((c) => !only || only.some((o) => c.name.includes(o)))) {
    for (const [build, mainJs] of builds) {
      // A fresh router per case and build: each starts from its own idle RSS.
      const router = await startRouter(mainJs, config, env);
      try {
        const idleRssMb = router.rssMb();
        for (const row of await c.run(router)) console.log(JSON.stringify({ case: c.name, build, idleRssMb, ...row }));
      } finally {
        await router.stop();
      }
    }
  }
  worker.close();
}

void main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
