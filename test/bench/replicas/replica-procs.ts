import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { hasExited } from '../../support/child-exit';

export const BENCH_TOKEN = 'bench-admin-token-0123456789';

export interface Replica { id: string; port: number; child: ChildProcess }

/** One router replica in its own process (replica-proc.js), resolved with its port once its servers are ready. */
export async function startReplica(id: string, config: Record<string, unknown>): Promise<Replica> {
  const child = spawn(process.execPath, [join(__dirname, 'replica-proc.js'), `--config=${JSON.stringify({ admin: { token: BENCH_TOKEN }, ...config })}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`replica ${id} exited (${code})`)));
  });
  return { id, port, child };
}

export async function adminCluster(port: number): Promise<{ workers: { owner: string | null }[] } | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/admin/v1/cluster`, { headers: { authorization: `Bearer ${BENCH_TOKEN}` } }).catch(() => undefined);
  return res?.status === 200 ? ((await res.json()) as { workers: { owner: string | null }[] }) : undefined;
}

/**
 * `count` kv_cache_aware replicas r1..rN over these workers, sharing the bus when `bus` is
 * given (stream and buckets named `name`), resolved once every worker has an owner.
 */
export async function startKvReplicas(count: number, workerUrls: readonly string[], tokensPerBlock: number, bus?: { url: string; name: string }): Promise<Replica[]> {
  const procs: Replica[] = [];
  try {
    for (let i = 1; i <= count; i++) {
      procs.push(await startReplica(`r${i}`, {
        generation_servers: { urls: workerUrls, router: { type: 'kv_cache_aware', tokens_per_block: tokensPerBlock } },
        health: { startup_wait_s: 0, interval_s: 1 },
        logging: { level: 'warn' },
        ...(bus ? { cluster: { bus: bus.url, replica_id: `r${i}`, name: bus.name } } : {}),
      }));
    }
    if (bus) await waitForOwners(procs, workerUrls.length);
  } catch (err) {
    await stopReplicas(procs);
    throw err;
  }
  return procs;
}

/** Until every replica sees an owner for every worker (bounded: 20 s). */
export async function waitForOwners(procs: readonly Replica[], workers: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const views = await Promise.all(procs.map((p) => adminCluster(p.port)));
    if (views.every((v) => v && v.workers.length === workers && v.workers.every((w) => w.owner))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function stopReplicas(procs: readonly Replica[]): Promise<void> {
  for (const p of procs) if (!hasExited(p.child)) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => (hasExited(p.child) ? undefined : new Promise((r) => p.child.once('exit', r)))));
}

/**
 * Runs the scenarios in order, printing each table row as it comes and the whole table at the
 * end (`header`: its first two lines); `cleanup` runs whatever happens.
 */
export async function printScenarioTable(names: readonly string[], run: (name: string) => Promise<string>, header: readonly [string, string], cleanup: () => Promise<void>): Promise<void> {
  const rows: string[] = [];
  try {
    for (const name of names) {
      const row = await run(name);
      process.stdout.write(`${row}\n`);
      rows.push(row);
    }
  } finally {
    await cleanup();
  }
  process.stdout.write(['', ...header, ...rows].join('\n') + '\n');
}
