import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { unusedPort } from '../../support/free-port';
import { waitFor } from '../../support/router-app';

/**
 * Router RSS under hostile worker answers: a context worker whose answer is 4 GiB (sent as
 * fast as the router reads it), then five concurrent 200 MB answers from requests asking for
 * max_tokens 1e6 (so the per-request limit is the 64 MiB ceiling). The router runs as its own
 * process; its RSS is sampled every 20 ms. Each request must end in 502 answer_too_large.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/hostile/answer-rss.js
 */
const CHUNK = Buffer.alloc(1 << 20, 0x20);

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

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

async function main(): Promise<void> {
  let answerBytes = 0;
  const worker = createServer((req, res) => {
    if (req.url === '/health') return void res.end();
    if (req.url === '/server_info') return void res.end('{}');
    req.resume();
    req.once('end', () => bigAnswer(res, answerBytes));
  });
  await new Promise<void>((r) => worker.listen(0, '127.0.0.1', r));
  const workerUrl = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  const port = await unusedPort();
  const dir = mkdtempSync(join(tmpdir(), 'disagg-hostile-'));
  const configFile = join(dir, 'router.yaml');
  writeFileSync(configFile, stringify({
    hostname: '127.0.0.1', port, max_retries: 0,
    context_servers: { urls: [workerUrl] }, generation_servers: { urls: [workerUrl] },
    health: { interval_s: 600, startup_wait_s: 10 }, logging: { level: 'error' },
  }));
  const child = spawn(process.execPath, [resolve('dist-bench/src/main.js'), '--config', configFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200, 30_000, 'router healthy');
  const idle = rssMb(child.pid!);

  const run = async (what: string, bytes: number, concurrent: number, maxTokens: number): Promise<Record<string, unknown>> => {
    answerBytes = bytes;
    let peak = rssMb(child.pid!);
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid!))), 20);
    const started = Date.now();
    const statuses = await Promise.all(Array.from({ length: concurrent }, async () => {
      const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt: 'hi', max_tokens: maxTokens }) });
      const json = (await res.json()) as { error?: { code?: string } };
      return `${res.status} ${json.error?.code ?? ''}`;
    }));
    clearInterval(sampler);
    return { case: what, statuses, ms: Date.now() - started, peakRssMb: peak };
  };

  const results = [
    await run('one 4 GiB context answer (max_tokens 16)', 4 * 1024 ** 3, 1, 16),
    await run('five concurrent 200 MB answers (max_tokens 1e6: 64 MiB ceiling)', 200 * 1024 ** 2, 5, 1_000_000),
  ];
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  worker.close();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify({ idleRssMb: idle, results }, null, 2)}\n`);
}

void main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
