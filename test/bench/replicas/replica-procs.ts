import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

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
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => (p.child.exitCode !== null || p.child.signalCode !== null ? undefined : new Promise((r) => p.child.once('exit', r)))));
}
