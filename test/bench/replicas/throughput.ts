import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimCluster } from '../../../src/simulator';
import { startNats, type NatsServer } from '../../support/nats-server';
import { runScript } from '../lib/run-script';
import { buildWorkload } from '../routing/workload';
import { hasHaproxy, startHaproxy } from './haproxy';
import { adminCluster, printScenarioTable, startKvReplicas, stopReplicas, type Replica } from './replica-procs';

/**
 * Throughput of one router against two replicas (with and without the shared view) on this
 * machine: wrk, closed loop, through haproxy round-robin in every case (so the proxy hop is the
 * same), over 4 simulated workers answering in a few ms. Bodies rotate over a multi-turn
 * shared-prefix workload so the workers keep publishing KV events. For the shared runs the
 * NATS server's own counters (/varz) give the bus traffic per request.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/replicas/throughput.js [--seconds=10 --connections=32 --only=one,two_local,two_shared]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const num = (k: string, d: number): number => Number(args.get(k) ?? d);
const SECONDS = num('seconds', 10);
const CONNECTIONS = num('connections', 32);
const WORKERS = 4;
const TPB = 32;
const LATENCY = { prefillMsPerToken: 0.001, decodeMsPerToken: 0.5, maxBatchSize: 64, overheadMs: 1 };

const WRK_SCRIPT = `
local bodies = {}
for line in io.lines(os.getenv("BENCH_BODIES")) do bodies[#bodies + 1] = line end
local i = 0
request = function()
  i = i % #bodies + 1
  return wrk.format("POST", "/v1/completions", { ["Content-Type"] = "application/json" }, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCHJSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%f,"p99_us":%f}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status, latency:percentile(50), latency:percentile(99)))
end
`;

interface WrkResult { requests: number; duration_us: number; errors: number; non2xx: number; p50_us: number; p99_us: number }

function wrk(url: string, dir: string): Promise<WrkResult> {
  const script = join(dir, 'rotate.lua');
  writeFileSync(script, WRK_SCRIPT);
  return new Promise((resolve, reject) => {
    execFile('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--timeout', '10s', '-s', script, url], { env: { ...process.env, BENCH_BODIES: join(dir, 'bodies.jsonl') }, timeout: (SECONDS + 30) * 1000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`wrk failed: ${err.message} ${stderr}`));
      const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
      if (!line) return reject(new Error(`wrk printed no result: ${stdout}`));
      resolve(JSON.parse(line.slice('BENCHJSON '.length)) as WrkResult);
    });
  });
}

interface Varz { in_msgs: number; out_msgs: number; in_bytes: number; out_bytes: number }
async function varz(nats: NatsServer): Promise<Varz> {
  return (await (await fetch(`${nats.monitorUrl}/varz`)).json()) as Varz;
}

async function scenario(name: string, replicas: number, shared: boolean, nats: NatsServer, dir: string): Promise<string> {
  const sim = await startSimCluster({ context: 0, generation: WORKERS, kvBlocks: 400, tokensPerBlock: TPB, latency: LATENCY, tokenizer: 'bytes' });
  let procs: Replica[] = [];
  try {
    procs = await startKvReplicas(replicas, sim.generationUrls, TPB, shared ? { url: nats.url, name } : undefined);
    const lb = await startHaproxy(procs.map((p) => p.port), dir);
    // A short warm-up fills the caches, so the measured run sees the steady state.
    await wrkWarm(lb.url, dir);
    const before = shared ? await varz(nats) : undefined;
    const r = await wrk(lb.url, dir);
    const after = shared ? await varz(nats) : undefined;
    // How old the peers' load reports were when they arrived, as each replica measured them.
    const staleness = shared ? await Promise.all(procs.map((p) => loadStaleness(p.port))) : [];
    await lb.close();
    const seconds = r.duration_us / 1e6;
    let bus = '';
    if (before && after) {
      const per = (x: number): string => (x / r.requests).toFixed(2);
      bus = `bus per request: ${per(after.in_msgs - before.in_msgs)} msgs in, ${per(after.out_msgs - before.out_msgs)} out; ` +
        `${((after.in_bytes - before.in_bytes) / r.requests / 1024).toFixed(2)} KiB in, ${((after.out_bytes - before.out_bytes) / r.requests / 1024).toFixed(2)} KiB out`;
    }
    if (staleness.length) bus += `; load report age p50/p99/max ms: ${staleness.map((a) => (a ? `${a.p50_ms}/${a.p99_ms}/${a.max_ms}` : '-')).join(', ')}`;
    return `| ${name} | ${replicas} | ${shared ? 'yes' : 'no'} | ${(r.requests / seconds).toFixed(0)} | ${(r.p50_us / 1000).toFixed(1)} | ${(r.p99_us / 1000).toFixed(1)} | ${r.errors + r.non2xx} | ${bus} |`;
  } finally {
    await stopReplicas(procs);
    await sim.close();
  }
}

async function loadStaleness(port: number): Promise<{ p50_ms: number; p99_ms: number; max_ms: number } | undefined> {
  const view = (await adminCluster(port)) as { load?: { staleness?: { p50_ms: number; p99_ms: number; max_ms: number } } } | undefined;
  return view?.load?.staleness;
}

async function wrkWarm(url: string, dir: string): Promise<void> {
  const script = join(dir, 'rotate.lua');
  writeFileSync(script, WRK_SCRIPT);
  await new Promise<void>((resolve) => execFile('wrk', ['-t1', `-c${CONNECTIONS}`, '-d2s', '-s', script, url], { env: { ...process.env, BENCH_BODIES: join(dir, 'bodies.jsonl') } }, () => resolve()));
}

async function main(): Promise<void> {
  if (!hasHaproxy()) throw new Error('haproxy is not installed: apt-get install -y haproxy');
  const dir = mkdtempSync(join(tmpdir(), 'replicas-tput-'));
  const workload = buildWorkload({ conversations: 64, turns: 5, systemPrompts: 16, systemTokens: 1024, userTokens: 96, answerTokens: 32, seed: 11 });
  const bodies = workload.flatMap((c) => c.turns.map((prompt) => JSON.stringify({ model: 'sim', prompt, max_tokens: 4 })));
  writeFileSync(join(dir, 'bodies.jsonl'), bodies.join('\n') + '\n');
  const only = (args.get('only') ?? 'one,two_local,two_shared').split(',');
  const plan: Record<string, [number, boolean]> = { one: [1, false], two_local: [2, false], two_shared: [2, true], three_shared: [3, true] };
  const nats = await startNats({ monitor: true });
  process.stdout.write(`wrk -c${CONNECTIONS} ${SECONDS} s per run through haproxy; ${WORKERS} simulated workers; ${bodies.length} rotating bodies\n`);
  await printScenarioTable(
    only,
    (name) => scenario(name, plan[name][0], plan[name][1], nats, dir),
    ['| run | replicas | shared view | req/s | p50 ms | p99 ms | errors | bus |', '|---|---|---|---|---|---|---|---|'],
    async () => {
      await nats.close();
      rmSync(dir, { recursive: true, force: true });
    },
  );
}

if (require.main === module) runScript(main);
