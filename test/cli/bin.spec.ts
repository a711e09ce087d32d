import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { buildDist, listeningUrl, startBinary as start, type RouterBinary as Proc } from '../support/router-binary';
import { postJson, waitFor } from '../support/router-app';
import { echoingContextHandler, hostPort, writeConfig } from '../compat/compat-support';

const run = promisify(execFile);

// The installed command, run as a user runs it (the built dist/, as npx and npm install -g run it).
describe('disagg-router binary', () => {
  const procs: Proc[] = [];
  let ctx: FakeWorker;
  let gen: FakeWorker;

  beforeAll(async () => {
    await buildDist();
    ctx = await new FakeWorker(echoingContextHandler()).start();
    gen = await new FakeWorker(generationHandler()).start();
  }, 180_000);
  afterAll(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    await ctx?.close();
    await gen?.close();
  });

  it('exits 2 with the usage and the offending argument on an unknown flag or a missing file', async () => {
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    for (const [args, offending] of [
      [['disaggregated', '-c', file, '--frobnicate'], "unknown option '--frobnicate'"],
      [['disaggregated', '-c', 'missing.yaml'], 'config file not found: missing.yaml'],
      [['disaggregated'], 'no config file given'],
    ] as const) {
      const proc = start([...args]);
      expect(await proc.exited).toBe(2);
      expect(proc.out()).toContain(offending);
      expect(proc.out()).toContain('Usage: disagg-router');
    }
    // Three process starts, one after the other, on a machine that may be busy.
  }, 120_000);

  it('serves a cluster described the TensorRT-LLM way, started with trtllm-serve flags', async () => {
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    const proc = start(['disaggregated', '-c', file, '-t', '60', '-r', '120', '-l', 'info', '--metrics-log-interval', '1']);
    procs.push(proc);
    const url = await listeningUrl(proc);
    await waitFor(async () => (await fetch(`${url}/health`)).status === 200, 15_000, '/health 200');
    const res = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 });
    expect(res.status).toBe(200);
    await waitFor(() => /context 1\/1 ready, 0 in flight; generation 1\/1 ready, 0 in flight/.test(proc.out()), 15_000, 'a metrics log line');
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
  });

  it('with -t: keeps listening with /health 503 and a reason, then exits 1 when a pool is still empty', async () => {
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: '127.0.0.1:1' });
    const proc = start(['disaggregated', '-c', file, '-t', '3', '-l', 'info']);
    procs.push(proc);
    const url = await listeningUrl(proc);
    const health = await fetch(`${url}/health`).catch(() => undefined);
    // Unless the machine was so slow the process is already gone, it answers 503 with a reason.
    if (health) {
      expect(health.status).toBe(503);
      expect(((await health.json()) as { reason: string }).reason).toMatch(/\S/);
    }
    expect(await proc.exited).toBe(1);
    expect(proc.out()).toMatch(/giving up: no generation server is ready after the server start timeout of 3 s/);
  });

  it('runs through npx from the checkout', async () => {
    const { stdout } = await run('npx', ['--no-install', 'disagg-router', '--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  }, 60_000);
});
