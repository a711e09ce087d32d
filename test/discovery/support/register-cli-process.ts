import { transformFileSync } from '@swc/core';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** The CLI and what it imports (it must not need the Nest app). */
const CLI_SOURCES = [
  'config/server-role.ts',
  'discovery/etcd-client.ts',
  'discovery/etcd-server-entry.ts',
  'discovery/lease-registration.ts',
  'discovery/worker-registration.ts',
  'discovery/cluster/cluster-keys.ts',
  'discovery/cluster/cluster-worker-registration.ts',
  'discovery/register-cli.ts',
];

/**
 * Compiles the register CLI to CommonJS in a temp dir (as `npm run build` would put it in
 * dist/) so a test can run it as a real process and signal it.
 */
export function buildRegisterCli(): { script: string; dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'register-cli-'));
  const src = resolve(process.cwd(), 'src');
  for (const file of CLI_SOURCES) {
    const out = transformFileSync(join(src, file), {
      module: { type: 'commonjs' },
      jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
    });
    const target = join(dir, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, out.code);
  }
  return { script: join(dir, 'discovery/register-cli.js'), dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface CliProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

export function runRegisterCli(script: string, args: string[]): CliProcess {
  const child = spawn(process.execPath, [script, ...args], {
    env: { ...process.env, NODE_PATH: resolve(process.cwd(), 'node_modules') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}
