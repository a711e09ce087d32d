import { transformFileSync } from '@swc/core';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The CLI's own sources: register-cli.ts and every file it reaches through relative imports.
 * It must load without the Nest app, so reaching a Nest package is an error.
 */
function cliSources(src: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const { importedFiles } = ts.preProcessFile(readFileSync(join(src, file), 'utf8'), true, false);
    for (const { fileName } of importedFiles) {
      if (fileName.startsWith('@nestjs/')) throw new Error(`${file} imports ${fileName}: the register CLI must not need Nest`);
      if (!fileName.startsWith('.')) continue;
      const target = relative(src, resolve(src, dirname(file), fileName));
      visit(existsSync(join(src, `${target}.ts`)) ? `${target}.ts` : join(target, 'index.ts'));
    }
  };
  visit('discovery/register-cli.ts');
  return [...seen];
}

/**
 * Compiles the register CLI to CommonJS in a temp dir (as `npm run build` would put it in
 * dist/) so a test can run it as a real process and signal it.
 */
export function buildRegisterCli(): { script: string; dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'register-cli-'));
  const src = resolve(process.cwd(), 'src');
  for (const file of cliSources(src)) {
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
