import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { hasExited } from './child-exit';

const installed = new Set<string>();

/**
 * Makes sure `bin` exists: when it is missing and this runs as root, installs the Debian
 * package that provides it; otherwise fails with the command to run.
 */
export function ensureDebianPackage(bin: string, pkg: string, envVar: string): void {
  if (installed.has(bin) || existsSync(bin)) {
    installed.add(bin);
    return;
  }
  if (process.getuid?.() !== 0) {
    throw new Error(`${pkg} is not installed (${bin} missing): run "sudo apt-get install -y ${pkg}" (or set ${envVar})`);
  }
  execFileSync('sh', ['-c', `apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkg}`], { stdio: 'inherit', timeout: 600_000 });
  if (!existsSync(bin)) throw new Error(`installing ${pkg} did not provide ${bin}`);
  installed.add(bin);
}

export interface ServerProcessSpec {
  /** How errors name it. */
  name: string;
  bin: string;
  args: readonly string[];
  /** stdout and stderr go here (appended). */
  logFile: string;
  /** True once the process serves. */
  answers(): Promise<boolean>;
  pollMs: number;
}

/** A server process that can be started, killed and started again with the same arguments. */
export interface ServerProcess {
  /** Spawns it (no-op while it runs) and resolves once it answers, within 20 s. */
  start(): Promise<void>;
  /** SIGKILL (no clean shutdown: an outage), resolved once it exited. */
  stop(): Promise<void>;
  /**
   * SIGSTOP / SIGCONT: the process keeps its sockets but answers nothing (a stalled server).
   * Freezing resolves once every thread of it is stopped: the signal lands asynchronously.
   */
  freeze(frozen: boolean): Promise<void>;
}

export function serverProcess(spec: ServerProcessSpec): ServerProcess {
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    if (child) return;
    const out = openSync(spec.logFile, 'a');
    const proc = spawn(spec.bin, spec.args, { stdio: ['ignore', out, out] });
    closeSync(out);
    child = proc;
    let exited: string | undefined;
    proc.once('exit', (code, signal) => {
      exited = `${spec.name} exited (${code ?? signal}); see ${spec.logFile}`;
      if (child === proc) child = undefined;
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (exited) throw new Error(exited);
      if (await spec.answers()) return;
      if (Date.now() > deadline) throw new Error(`${spec.name} did not answer within 20 s; see ${spec.logFile}`);
      await new Promise((r) => setTimeout(r, spec.pollMs));
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    if (hasExited(proc)) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  };

  const freeze = async (frozen: boolean): Promise<void> => {
    const proc = child;
    if (!proc?.pid || hasExited(proc)) return;
    proc.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
    const deadline = Date.now() + 5_000;
    while (frozen && !allThreadsStopped(proc.pid)) {
      if (Date.now() > deadline) throw new Error(`${spec.name} did not stop within 5 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  return { start, stop, freeze };
}

/** Linux: whether every thread of the process is in the stopped state (T in /proc/PID/task/TID/stat). */
function allThreadsStopped(pid: number): boolean {
  const tasks = readdirSync(`/proc/${pid}/task`);
  // The state follows the parenthesised command name, which may itself hold spaces.
  return tasks.every((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] === 'T';
  });
}
