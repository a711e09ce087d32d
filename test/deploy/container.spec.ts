import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { unusedPort } from '../support/free-port';
import { postJson, waitFor } from '../support/router-app';
import { envOf, execForm, last, parseDockerfile, type Stage } from './dockerfile';
import { hasExited } from '../support/child-exit';

const ROOT = process.cwd();
const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runtime = stages[stages.length - 1];
const runs = (stage: Stage): string[] => stage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);

/** COPY sources from the build context (not --from a stage). */
function contextCopies(stage: Stage): string[] {
  return stage.instructions
    .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
}

describe('Dockerfile', () => {
  it('builds dist in a build stage and runs it as a non-root user with production dependencies only', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((s) => s.name && runs(s).some((r) => r.includes('npm run build')));
    expect(build).toBeDefined();
    const copiedDist = runtime.instructions.find((i) => i.keyword === 'COPY' && i.args.startsWith(`--from=${build!.name}`));
    expect(copiedDist?.args).toMatch(/\/dist\s+\.\/dist$/);
    expect(runs(runtime).some((r) => /npm ci\b.*--omit=dev/.test(r))).toBe(true);
    const user = last(runtime, 'USER')?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user!.split(':')[0]);
    expect(last(runtime, 'HEALTHCHECK')?.args).toMatch(/\/health/);
    // Both stages use an LTS line this project is tested on.
    for (const s of stages) expect(s.from).toMatch(/^node:(22|24)\b/);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    for (const stage of stages) {
      for (const src of contextCopies(stage)) {
        expect({ src, exists: existsSync(join(ROOT, src)) }).toEqual({ src, exists: true });
        expect({ src, ignored: ignored.includes(src.replace(/\/$/, '')) }).toEqual({ src, ignored: false });
      }
    }
  });
});

describe('the image entry command on a clean `npm ci --omit=dev` install', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  let output = '';

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'disagg-router-image-'));
    // The runtime stage, file by file: the lockfile's production dependencies (from npm's
    // cache: no network here), dist as the build stage compiles it, the config directory.
    cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    cpSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
    const npmCli = resolve(process.execPath, '../../lib/node_modules/npm/bin/npm-cli.js');
    const npmArgs = ['ci', '--omit=dev', '--offline', '--no-audit', '--no-fund', '--loglevel=error'];
    const npm = existsSync(npmCli)
      ? spawnSync(process.execPath, [npmCli, ...npmArgs], { cwd: dir, encoding: 'utf8' })
      : spawnSync('npm', npmArgs, { cwd: dir, encoding: 'utf8' });
    if (npm.status !== 0) throw new Error(`npm ci --omit=dev failed (npm's cache is filled by a first npm ci):\n${npm.stdout}${npm.stderr}`);
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const build = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')], { encoding: 'utf8' });
    if (!existsSync(join(dir, 'dist/main.js'))) throw new Error(`build failed: ${build.stdout}${build.stderr}`);
    cpSync(join(ROOT, 'config'), join(dir, 'config'), { recursive: true });
  }, 240_000);

  afterAll(async () => {
    if (child && !hasExited(child)) {
      const gone = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves, passes its HEALTHCHECK and exits 0 on SIGTERM', async () => {
    // A development dependency the router must not need.
    expect(existsSync(join(dir, 'node_modules/jest'))).toBe(false);
    const port = await unusedPort();
    // The image's environment; the address is narrowed to loopback for the test.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...envOf(runtime), DISAGG_HOST: '127.0.0.1', DISAGG_PORT: String(port) };
    const [entry, ...entryArgs] = [...execForm(last(runtime, 'ENTRYPOINT')!.args), ...execForm(last(runtime, 'CMD')!.args)];
    expect(entry).toBe('node');
    child = spawn(process.execPath, entryArgs, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => {
      if (hasExited(child!)) throw new Error(`the router exited (${child!.exitCode ?? child!.signalCode}):\n${output}`);
      return (await fetch(`${url}/health`).catch(() => undefined))?.status === 200;
    }, 60_000, 'the router to be healthy').catch((err: Error) => {
      throw new Error(`${err.message}; its output:\n${output}`);
    });

    const [hcBin, ...hcArgs] = execForm(last(runtime, 'HEALTHCHECK')!.args.replace(/^.*?\bCMD\s+/, ''));
    expect(hcBin).toBe('node');
    const healthcheck = spawnSync(process.execPath, hcArgs, { cwd: dir, env, encoding: 'utf8', timeout: 20_000 });
    if (healthcheck.status !== 0) {
      // What the check saw, then what /health says now and what the router logged: the cause, not only the exit code.
      const now = await fetch(`${url}/health`).then(async (r) => `${r.status} ${await r.text()}`, (err: Error) => err.message);
      throw new Error(`HEALTHCHECK exited ${healthcheck.status ?? healthcheck.signal}: ${healthcheck.stdout}${healthcheck.stderr}\n/health now: ${now}\nrouter output:\n${output}`);
    }

    const answer = await postJson(`${url}/v1/completions`, { model: 'sim-model', prompt: 'The capital of France is', max_tokens: 4 });
    expect(answer.status).toBe(200);
    expect((answer.json.choices as unknown[]).length).toBe(1);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 90_000);
});
