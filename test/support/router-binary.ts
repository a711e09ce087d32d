import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { waitFor } from './router-app';

const BIN = 'bin/disagg-router.js';

/** The router's command run as a child process, its output collected. */
export interface RouterBinary {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** Builds dist/ as a user's install has it (the binary runs the built code). */
export async function buildDist(): Promise<void> {
  await promisify(execFile)(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
}

export function startBinary(args: string[], env: NodeJS.ProcessEnv = process.env): RouterBinary {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out: () => out, exited };
}

/** The URL the router says it listens on. */
export async function listeningUrl(proc: RouterBinary): Promise<string> {
  await waitFor(() => /listening on http:\/\/[\d.]+:\d+/.test(proc.out()), 60_000, 'the router to listen');
  return /listening on (http:\/\/[\d.]+:\d+)/.exec(proc.out())![1];
}
