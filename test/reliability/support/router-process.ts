import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { unusedPort } from '../../support/free-port';
import { waitFor } from '../../support/router-app';

export interface RouterProcess {
  url: string;
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
  kill(): void;
}

/** Compiles src/ into a temp dir (never dist/, which others may be building) once per test file. */
export function buildRouter(): { mainJs: string; dispose(): void } {
  const root = process.cwd();
  const outDir = mkdtempSync(join(tmpdir(), 'disagg-router-build-'));
  const tsc = resolve(root, 'node_modules/typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', resolve(root, 'tsconfig.build.json'), '--outDir', outDir], { encoding: 'utf8' });
  const mainJs = join(outDir, 'main.js');
  // tsc emits despite type errors elsewhere in the tree; only a missing entry point is fatal.
  if (!existsSync(mainJs)) throw new Error(`build failed: ${res.stdout}${res.stderr}`);
  return { mainJs, dispose: () => rmSync(outDir, { recursive: true, force: true }) };
}

/** Runs the built router as a child process (`node main.js --config FILE`) and waits for /health 200. */
export async function spawnRouter(mainJs: string, config: Record<string, unknown>): Promise<RouterProcess> {
  const port = await unusedPort();
  const dir = mkdtempSync(join(tmpdir(), 'disagg-router-cfg-'));
  const file = join(dir, 'router.yaml');
  writeFileSync(file, stringify({ hostname: '127.0.0.1', port, logging: { level: 'warn' }, ...config }));
  const child = spawn(process.execPath, [mainJs, '--config', file], {
    cwd: process.cwd(),
    // The build lives outside the repo: let it find the repo's packages.
    env: { ...process.env, NODE_PATH: resolve(process.cwd(), 'node_modules') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.once('exit', (code, signal) => {
      rmSync(dir, { recursive: true, force: true });
      resolveExit({ code, signal });
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    await waitFor(async () => {
      if (gone) throw new Error(`router exited during startup:\n${out}`);
      return (await fetch(`${url}/health`).catch(() => undefined))?.status === 200;
    }, 20_000, 'the router process to be healthy');
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  return { url, child, exited, output: () => out, kill: () => void child.kill('SIGKILL') };
}
