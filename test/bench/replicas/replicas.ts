import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startSimCluster, type SimCluster } from '../../../src/simulator';
import { startNats, type NatsServer } from '../../support/nats-server';
import { runScript } from '../lib/run-script';
import { buildWorkload, type Conversation } from '../routing/workload';
import { hasHaproxy, startHaproxy } from './haproxy';
import { adminCluster, printScenarioTable, startKvReplicas, stopReplicas, type Replica } from './replica-procs';

/**
 * The routing-quality workload (multi-turn shared-prefix conversations, 4 simulated workers
 * with a small KV cache) through router replicas behind haproxy round-robin:
 *   one router; three replicas without the shared view; three with it; three with one
 *   killed (SIGKILL) mid-run; three with the bus stopped mid-run and started again.
 * Prefix hit rate = cached / prompt tokens as the workers report them.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/replicas/replicas.js \
 *     [--only=single,three_local,three_shared,kill,bus,throughput --conversations=160 --concurrency=16]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const num = (k: string, d: number): number => Number(args.get(k) ?? d);
const OPTS = { conversations: num('conversations', 160), turns: 5, systemPrompts: 16, systemTokens: 2048, userTokens: 96, answerTokens: 32, seed: 7 };
const WORKERS = 4;
const KV_BLOCKS = 400;
const TPB = 32;
const CONCURRENCY = num('concurrency', 16);
const LATENCY = { prefillMsPerToken: 0.02, decodeMsPerToken: 1, maxBatchSize: 32, overheadMs: 1 };
const dir = mkdtempSync(join(tmpdir(), 'replicas-bench-'));

interface Sample { start: number; end: number; ok: boolean; prompt: number; cached: number }
async function turn(url: string, conv: Conversation, t: number): Promise<Sample> {
  const start = performance.now();
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', prompt: conv.turns[t], max_tokens: 4 }),
      signal: AbortSignal.timeout(30_000),
    });
    const json = (await res.json()) as { usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } };
    if (res.status !== 200 || !json.usage) return { start, end: performance.now(), ok: false, prompt: 0, cached: 0 };
    return { start, end: performance.now(), ok: true, prompt: json.usage.prompt_tokens, cached: json.usage.prompt_tokens_details?.cached_tokens ?? 0 };
  } catch {
    return { start, end: performance.now(), ok: false, prompt: 0, cached: 0 };
  }
}

async function drive(url: string, workload: Conversation[], onProgress: (done: number, total: number) => void): Promise<Sample[]> {
  const queue = [...workload];
  const total = workload.length * OPTS.turns;
  const samples: Sample[] = [];
  const deadline = performance.now() + 180_000;
  const client = async (): Promise<void> => {
    for (let conv = queue.shift(); conv && performance.now() < deadline; conv = queue.shift()) {
      for (let t = 0; t < conv.turns.length; t++) {
        samples.push(await turn(url, conv, t));
        onProgress(samples.length, total);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return samples;
}

const hit = (xs: Sample[]): number => {
  const ok = xs.filter((s) => s.ok);
  const prompt = ok.reduce((n, s) => n + s.prompt, 0);
  return prompt ? ok.reduce((n, s) => n + s.cached, 0) / prompt : 0;
};
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

type Event = 'kill' | 'bus' | undefined;

async function scenario(name: string, replicas: number, shared: boolean, event: Event, nats: NatsServer, workload: Conversation[]): Promise<string> {
  const sim: SimCluster = await startSimCluster({ context: 0, generation: WORKERS, kvBlocks: KV_BLOCKS, tokensPerBlock: TPB, latency: LATENCY, tokenizer: 'bytes' });
  let procs: Replica[] = [];
  try {
    procs = await startKvReplicas(replicas, sim.generationUrls, TPB, shared ? { url: nats.url, name } : undefined);
    const lb = await startHaproxy(procs.map((p) => p.port), dir);
    let marks: Record<string, number> = {};
    let fired = false;
    const fire = (done: number, total: number): void => {
      if (fired || !event || done < total * 0.3) return;
      fired = true;
      marks.event = performance.now();
      if (event === 'kill') {
        procs[0].child.kill('SIGKILL');
        void (async () => {
          // Bounded: a move that takes over 30 s is reported as n/a.
          for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
            const view = await adminCluster(procs[1].port);
            if (view && view.workers.every((w) => w.owner && w.owner !== 'r1')) {
              marks = { ...marks, moved: performance.now() };
              return;
            }
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
      } else {
        void (async () => {
          await nats.stop();
          await new Promise((r) => setTimeout(r, 3_000));
          await nats.start();
          marks = { ...marks, back: performance.now() };
        })();
      }
    };
    const t0 = performance.now();
    const samples = await drive(lb.url, workload, fire);
    const seconds = (performance.now() - t0) / 1000;
    await lb.close();
    const failed = samples.filter((s) => !s.ok).length;
    let extra = '';
    if (event === 'kill' && marks.event) {
      const after = marks.moved ? samples.filter((s) => s.start > marks.moved) : [];
      extra = `killed at ${((marks.event - t0) / 1000).toFixed(1)} s; ownership moved in ${marks.moved ? ((marks.moved - marks.event) / 1000).toFixed(2) + ' s' : 'n/a'}; ` +
        `hit before ${pct(hit(samples.filter((s) => s.end < marks.event)))}, after the move ${pct(hit(after))} (${after.length} requests)`;
    }
    if (event === 'bus' && marks.event) {
      const outage = samples.filter((s) => s.start > marks.event && (!marks.back || s.end < marks.back));
      const after = marks.back ? samples.filter((s) => s.start > marks.back + 1_000) : [];
      extra = `bus down ${((marks.event - t0) / 1000).toFixed(1)} s for 3 s; hit before ${pct(hit(samples.filter((s) => s.end < marks.event)))}, ` +
        `during ${pct(hit(outage))} (${outage.length} req), from 1 s after its return ${pct(hit(after))} (${after.length} req)`;
    }
    return `| ${name} | ${replicas} | ${shared ? 'yes' : 'no'} | ${pct(hit(samples))} | ${samples.length - failed} | ${failed} | ${seconds.toFixed(1)} | ${extra} |`;
  } finally {
    await stopReplicas(procs);
    await sim.close();
  }
}

async function main(): Promise<void> {
  if (!hasHaproxy()) throw new Error('haproxy is not installed: apt-get install -y haproxy');
  const only = (args.get('only') ?? 'single,three_local,three_shared,kill,bus').split(',');
  const nats = await startNats();
  const workload = buildWorkload(OPTS);
  const plan: Record<string, [number, boolean, Event]> = {
    single: [1, false, undefined],
    three_local: [3, false, undefined],
    three_shared: [3, true, undefined],
    kill: [3, true, 'kill'],
    bus: [3, true, 'bus'],
  };
  process.stdout.write(`workload: ${OPTS.conversations} conversations x ${OPTS.turns} turns, ${WORKERS} workers x ${KV_BLOCKS} KV blocks, ${CONCURRENCY} concurrent, haproxy round-robin\n`);
  await printScenarioTable(
    only,
    (name) => scenario(name, plan[name][0], plan[name][1], plan[name][2], nats, workload),
    ['| scenario | replicas | shared view | prefix hit rate | ok | failed | s | notes |', '|---|---|---|---|---|---|---|---|'],
    async () => {
      await nats.close();
      rmSync(dir, { recursive: true, force: true });
    },
  );
}

if (require.main === module) runScript(main);
