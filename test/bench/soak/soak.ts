import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { unusedPort } from '../../support/free-port';
import { waitFor } from '../../support/router-app';
import { startSoakCluster } from './soak-cluster';
import { sampleRotation } from './rotation-sampler';
import { runSoak, type SoakResult } from './soak-driver';

/**
 * The long soak: the router as its own process (so its RSS is its own) in front of simulated
 * workers failing 5% of calls, 10% of requests abandoned by the client, a generation worker
 * killed and restarted on its port every --kill-every-s. Reports outcomes, RSS over time and
 * the load counters once idle; ends with SIGTERM and checks the exit code.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/soak/soak.js [--minutes=10]
 *     [--concurrency=32] [--kill-every-s=60] [--abort=0.1] [--errors=0.05]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const MINUTES = Number(args.get('minutes') ?? process.env.SOAK_MINUTES ?? 10);
const CONCURRENCY = Number(args.get('concurrency') ?? 32);
const KILL_EVERY_S = Number(args.get('kill-every-s') ?? 60);
const ABORT = Number(args.get('abort') ?? 0.1);
const ERRORS = Number(args.get('errors') ?? 0.05);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

async function main(): Promise<void> {
  const cluster = await startSoakCluster({ context: 2, generation: 2, errorFraction: ERRORS, seed: 7, decodeMsPerToken: 1 });
  const port = await unusedPort();
  const dir = mkdtempSync(join(tmpdir(), 'disagg-soak-'));
  const configFile = join(dir, 'router.yaml');
  writeFileSync(
    configFile,
    stringify({
      hostname: '127.0.0.1',
      port,
      max_retries: 1,
      context_servers: { urls: cluster.contextUrls },
      generation_servers: { urls: cluster.generationUrls },
      // The simulated workers share this process with the client lanes: a check must outlast
      // its event-loop stalls on a loaded machine, or every server fails its checks at once
      // and both pools empty (the 503 bursts of earlier runs; see the rotation report).
      health: { interval_s: 0.5, timeout_s: 3 },
      limits: { max_in_flight: 64, queue_size: 64, queue_timeout_ms: 10_000 },
      logging: { level: 'error' },
    }),
  );
  const child = spawn(process.execPath, [resolve('dist-bench/src/main.js'), '--config', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200, 30_000, 'router healthy');

  const samples: { t: number; rssMb: number }[] = [];
  const t0 = Date.now();
  const sampler = setInterval(() => samples.push({ t: Math.round((Date.now() - t0) / 1000), rssMb: rssMb(child.pid!) }), 5_000);
  const rotation = sampleRotation(url, t0);
  const kills: number[] = [];
  let restarts = 0;
  const killer = setInterval(() => {
    void (async () => {
      kills.push(Math.round((Date.now() - t0) / 100) / 10);
      await cluster.kill('generation', 0);
      await new Promise((r) => setTimeout(r, 2_000));
      await cluster.restart('generation', 0);
      restarts++;
    })();
  }, KILL_EVERY_S * 1000);

  const result: SoakResult = await runSoak({ url, concurrency: CONCURRENCY, durationMs: MINUTES * 60_000, abortFraction: ABORT, seed: 11, requestTimeoutMs: 30_000 });
  clearInterval(killer);
  clearInterval(sampler);
  const rotationReport = rotation.stop();
  samples.push({ t: Math.round((Date.now() - t0) / 1000), rssMb: rssMb(child.pid!) });

  // Idle: every load counter of the router must be back to zero.
  let info: { context_servers: { active_requests: number }[]; generation_servers: { active_requests: number }[] } | undefined;
  await waitFor(async () => {
    info = (await (await fetch(`${url}/cluster_info`)).json()) as typeof info;
    return [...info!.context_servers, ...info!.generation_servers].every((s) => s.active_requests === 0);
  }, 10_000, 'load counters back to zero').catch(() => undefined);
  const leftover = [...info!.context_servers, ...info!.generation_servers].reduce((a, s) => a + s.active_requests, 0);

  child.kill('SIGTERM');
  const exitCode = await exited;
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });

  const warm = samples.find((s) => s.t >= 60) ?? samples[0];
  const last = samples.at(-1)!;
  const report = {
    minutes: MINUTES,
    concurrency: CONCURRENCY,
    requests: result.total,
    reqPerS: Math.round((result.total / result.elapsedMs) * 1000),
    complete: result.complete,
    errors: result.errors,
    errorSamples: result.errorSamples,
    aborted: result.aborted,
    bad: result.bad,
    badSamples: result.badSamples,
    workerRestarts: restarts,
    leftoverActiveRequests: leftover,
    exitCode,
    rssMb: { first: samples[0]?.rssMb, at60s: warm?.rssMb, max: Math.max(...samples.map((s) => s.rssMb)), last: last.rssMb },
    rssSamples: samples,
    killsAtS: kills,
    rotation: rotationReport,
    errorTimes: result.errorTimes,
    routerStderrTail: stderr.slice(-2_000),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = result.bad === 0 && leftover === 0 && exitCode === 0 ? 0 : 1;
}

void main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
