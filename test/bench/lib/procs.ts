import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildMessage, ParentMessage, ProcStats, ProfileMode } from './proc-child';
import { hasExited } from '../../support/child-exit';

/** CPU sets: the measured proxy alone on cpu0, load driver and upstreams on cpu1. */
export const PROXY_CPU = '0';
export const LOAD_CPU = '1';

let tasksetChecked: boolean | undefined;
export function hasTaskset(): boolean {
  if (tasksetChecked === undefined) {
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
      tasksetChecked = true;
    } catch {
      tasksetChecked = false;
    }
  }
  return tasksetChecked;
}

export function pin(pid: number, cpus: string): void {
  if (!hasTaskset()) return;
  try {
    execFileSync('taskset', ['-a', '-cp', cpus, String(pid)], { stdio: 'ignore' });
  } catch {
    /* pinning is best effort */
  }
}

export interface BenchProc {
  name: string;
  pid?: number;
  ports: number[];
  stats(): Promise<ProcStats>;
  stop(): Promise<void>;
  profileStart?(mode: ProfileMode): void;
  profileStop?(file: string): Promise<void>;
}

export interface StartOptions {
  name: string;
  script: string;
  args?: string[];
  cpus: string;
  execArgv?: string[];
  logDir: string;
  timeoutMs?: number;
}

/** Forks a benchmark process, pins it, waits for its port; its output goes to a log file. */
export async function startProc(o: StartOptions): Promise<BenchProc> {
  const log = openSync(join(o.logDir, `${o.name}.log`), 'w');
  const child: ChildProcess = fork(o.script, o.args ?? [], {
    execArgv: o.execArgv ?? [],
    stdio: ['ignore', log, log, 'ipc'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  if (child.pid) pin(child.pid, o.cpus);
  const first = await new Promise<ChildMessage>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${o.name}: not ready after ${o.timeoutMs ?? 30000} ms`)), o.timeoutMs ?? 30000);
    child.once('message', (m: ChildMessage) => {
      clearTimeout(timer);
      resolve(m);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${o.name}: exited with ${code} before it was ready (see ${o.logDir}/${o.name}.log)`));
    });
  });
  if (first.type === 'error') {
    child.kill();
    throw new Error(`${o.name}: ${first.message.split('\n')[0]}`);
  }
  if (first.type !== 'ready') throw new Error(`${o.name}: unexpected first message ${first.type}`);
  // Worker threads started after boot (none expected) would escape the first pin.
  if (child.pid) pin(child.pid, o.cpus);
  const send = (m: ParentMessage): void => void child.send(m);
  return {
    name: o.name,
    pid: child.pid,
    ports: first.ports ?? [first.port],
    stats: () =>
      new Promise<ProcStats>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${o.name}: no stats`)), 10_000);
        const on = (m: ChildMessage): void => {
          if (m.type !== 'stats') return;
          child.off('message', on);
          clearTimeout(timer);
          resolve(m.stats);
        };
        child.on('message', on);
        send({ type: 'stats' });
      }),
    profileStart: (mode) => send({ type: 'profile-start', mode }),
    profileStop: (file) =>
      new Promise<void>((resolve) => {
        const on = (m: ChildMessage): void => {
          if (m.type !== 'profiled') return;
          child.off('message', on);
          resolve();
        };
        child.on('message', on);
        send({ type: 'profile-stop', file });
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (hasExited(child)) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 8000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        send({ type: 'stop' });
      }),
  };
}

let ticksPerSecond: number | undefined;

/**
 * A process' CPU time (user + system, every thread of it; with `mainThreadOnly`, its main
 * thread's: the rest is V8's helpers, libuv's pool and worker threads) read from outside, in
 * /proc; undefined where there is no /proc.
 */
export function cpuFromOutsideUs(pid: number, mainThreadOnly = false): number | undefined {
  try {
    const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1e6;
  } catch {
    return undefined;
  }
}
