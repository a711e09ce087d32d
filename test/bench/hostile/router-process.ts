import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { unusedPort } from '../../support/free-port';
import { waitFor } from '../../support/router-app';
import type { ProbeAnswer, ProbeMemory, ProbeRequest } from './memory-probe';

const MB = 1024 * 1024;
/**
 * Node flags for the router processes, e.g. `HOSTILE_ROUTER_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=/tmp/prof"` (NODE_OPTIONS refuses --cpu-prof); such a router is stopped with
 * SIGTERM so it can write its profile.
 */
const EXTRA_NODE_ARGS = (process.env.HOSTILE_ROUTER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const mb = (bytes: number): number => Math.round((bytes / MB) * 10) / 10;

/** A router build run as its own process, for the hostile benches: its RSS, memory and /health. */
export interface RouterProcess {
  url: string;
  pid: number;
  /** The config file's directory (removed on stop). */
  dir: string;
  exited(): boolean;
  rssMb(): number;
  /** CPU seconds (user + system, all threads) the router used so far. */
  cpuSeconds(): number;
  residentByKindMb(): ReturnType<typeof residentByKindMb>;
  /** process.memoryUsage() in the router after a full GC, in MB. */
  memoryMb(): Promise<Record<keyof ProbeMemory, number>>;
  heapSnapshot(file: string): Promise<string>;
  stop(): Promise<void>;
}

/** Resident MB of the process' mappings by kind: the brk heap, other anonymous memory, the rest. */
export function residentByKindMb(pid: number): { brkHeap: number; anon: number; other: number } {
  const out = { brkHeap: 0, anon: 0, other: 0 };
  let kind: keyof typeof out = 'other';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) kind = head[1] === '[heap]' ? 'brkHeap' : head[1] === '' ? 'anon' : 'other';
    else if (line.startsWith('Rss:')) out[kind] += Number(/\d+/.exec(line)?.[0] ?? 0) / 1024;
  }
  return { brkHeap: Math.round(out.brkHeap), anon: Math.round(out.anon), other: Math.round(out.other) };
}

export function cpuSecondsOf(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

export function rssMbOf(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return Math.round(kb / 102.4) / 10;
  } catch {
    return 0;
  }
}

/**
 * Starts `mainJs` (a router build's dist main.js) on a free loopback port with `config` (the port
 * and hostname are added) and waits for /health to answer 200 (`ready: 'answering'`: to answer at
 * all, for a router whose workers come later). The memory probe is preloaded with an IPC
 * channel; `env` is added to the router's environment.
 */
export async function startRouter(mainJs: string, config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}, ready: 'healthy' | 'answering' = 'healthy'): Promise<RouterProcess> {
  const port = await unusedPort();
  const dir = mkdtempSync(join(tmpdir(), 'disagg-hostile-'));
  const configFile = join(dir, 'router.yaml');
  writeFileSync(configFile, stringify({ hostname: '127.0.0.1', port, ...config }));
  const probe = join(__dirname, 'memory-probe.js');
  const child: ChildProcess = spawn(process.execPath, [...EXTRA_NODE_ARGS, '--expose-gc', '-r', probe, mainJs, '--config', configFile], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    env: { ...process.env, HF_HUB_CACHE: dir, ...env },
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  const ask = <T extends ProbeAnswer['type']>(req: ProbeRequest & { type: T }): Promise<Extract<ProbeAnswer, { type: T }>> =>
    new Promise((resolve, reject) => {
      const onMessage = (m: ProbeAnswer): void => {
        if (m.type !== req.type) return;
        child.off('message', onMessage);
        resolve(m as Extract<ProbeAnswer, { type: T }>);
      };
      child.on('message', onMessage);
      if (!child.send(req)) reject(new Error('router probe channel closed'));
    });
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      // A profiled router must exit on its own to write its profile; a stuck one is killed after 10 s.
      child.kill(EXTRA_NODE_ARGS.length > 0 ? 'SIGTERM' : 'SIGKILL');
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(kill);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const answered = (status: number | undefined): boolean => (ready === 'healthy' ? status === 200 : status !== undefined);
    await waitFor(async () => exited || answered((await fetch(`${url}/health`).catch(() => undefined))?.status), 60_000, `router ${ready}`);
    if (exited) throw new Error(`router ${mainJs} exited at start`);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url, pid: child.pid!, dir,
    exited: () => exited,
    rssMb: () => rssMbOf(child.pid!),
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    residentByKindMb: () => residentByKindMb(child.pid!),
    memoryMb: async () => {
      const { memory } = await ask({ type: 'memory' });
      return { rss: mb(memory.rss), heapUsed: mb(memory.heapUsed), heapTotal: mb(memory.heapTotal), external: mb(memory.external), arrayBuffers: mb(memory.arrayBuffers) };
    },
    heapSnapshot: async (file) => (await ask({ type: 'snapshot', file })).file,
    stop,
  };
}
