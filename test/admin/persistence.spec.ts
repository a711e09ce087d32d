import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { LogCapture } from '../observability/log-capture';
import { startRouter, type RunningRouter } from '../support/router-app';
import { admin, complete, errorOf, TestPoliciesModule, TOKEN, whenReady } from './admin-support';

describe('admin changes persisted to admin.persist_file', () => {
  let dir: string;
  let a: FakeWorker;
  let b: FakeWorker;
  let c: FakeWorker;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'disagg-admin-'));
    [a, b, c] = await Promise.all([0, 1, 2].map(() => new FakeWorker(generationHandler()).start()));
  });
  afterAll(async () => {
    await Promise.all([a, b, c].map((w) => w?.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  const boot = (file: string, logs?: LogCapture): Promise<RunningRouter> =>
    startRouter({ generation_servers: { urls: [a.url, c.url] }, admin: { token: TOKEN, persist_file: file } }, [TestPoliciesModule], logs ? { logDestination: logs } : {});
  const idOf = (w: FakeWorker): string => `generation-127.0.0.1-${w.port}`;
  const servers = async (r: RunningRouter): Promise<Array<Record<string, unknown>>> => (await admin(r.url, 'GET', 'servers')).body.servers as Array<Record<string, unknown>>;

  it('keeps added servers, removed config servers and policy switches across a restart', async () => {
    const file = join(dir, 'nested', 'admin-state.json');
    const first = await boot(file);
    try {
      expect((await admin(first.url, 'POST', 'servers', { url: b.url, role: 'generation' })).status).toBe(201);
      expect((await admin(first.url, 'DELETE', `servers/${idOf(c)}`)).status).toBe(200);
      expect((await admin(first.url, 'PUT', 'routers/generation', { type: 'first_server', label: 'kept' })).status).toBe(200);
    } finally {
      await first.close();
    }
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      version: 1,
      added_servers: [{ url: b.url, role: 'generation' }],
      removed_servers: [{ url: c.url, role: 'generation' }],
      routers: { generation: { type: 'first_server', label: 'kept' } },
    });
    // Written by rename: no temporary file is left next to it.
    expect(readdirSync(join(dir, 'nested'))).toEqual(['admin-state.json']);

    const second = await boot(file);
    try {
      const list = await servers(second);
      expect(list.map((s) => [s.id, s.source])).toEqual(expect.arrayContaining([[idOf(a), 'config'], [idOf(b), 'admin']]));
      expect(list.find((s) => s.id === idOf(c))).toBeUndefined();
      const routers = (await admin(second.url, 'GET', 'routers')).body.routers as Array<Record<string, unknown>>;
      expect(routers.find((r) => r.pool === 'generation')).toMatchObject({ type: 'first_server', args: { label: 'kept' } });
      await whenReady(second, idOf(b));
      for (let i = 0; i < 2; i++) await complete(second.url);
      expect(c.requests('/v1/completions')).toHaveLength(0);
      expect(a.requests('/v1/completions').length + b.requests('/v1/completions').length).toBe(2);
    } finally {
      await second.close();
    }
  });

  it('forgets an added server that was deleted, and puts back a config server re-added', async () => {
    const file = join(dir, 'second.json');
    const first = await boot(file);
    try {
      await admin(first.url, 'POST', 'servers', { url: b.url, role: 'generation' });
      await admin(first.url, 'DELETE', `servers/${idOf(b)}`);
      await admin(first.url, 'DELETE', `servers/${idOf(c)}`);
      await admin(first.url, 'POST', 'servers', { url: c.url, role: 'generation' });
    } finally {
      await first.close();
    }
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ added_servers: [{ url: c.url, role: 'generation' }], removed_servers: [] });
    const second = await boot(file);
    try {
      const ids = (await servers(second)).map((s) => s.id);
      expect(ids).toContain(idOf(c));
      expect(ids).not.toContain(idOf(b));
    } finally {
      await second.close();
    }
  });

  it('answers 500 when the file cannot be written, with the change in effect in memory', async () => {
    const file = join(dir, 'blocked.json');
    const router = await boot(file);
    try {
      // A directory where the file should go: the final rename fails.
      mkdirSync(file);
      const res = await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
      expect(res.status).toBe(500);
      expect(errorOf(res)).toMatchObject({ type: 'server_error', code: 'persist_failed' });
      expect((await servers(router)).map((s) => s.id)).toContain(idOf(b));
      expect(readdirSync(dir).filter((f) => f.startsWith('blocked.json.'))).toEqual([]);
    } finally {
      await router.close();
    }
  });

  it('refuses to start with a damaged file, naming it', async () => {
    const file = join(dir, 'damaged.json');
    // The refusals are logged (once each) into a capture, not the test's output.
    const logs = new LogCapture();
    writeFileSync(file, '{"version": 1, "added_servers": [');
    await expect(boot(file, logs)).rejects.toThrow(/admin\.persist_file: .*damaged\.json is not valid JSON/);
    writeFileSync(file, JSON.stringify({ version: 1, added_servers: [{ url: 'ftp://x', role: 'generation' }] }));
    await expect(boot(file, logs)).rejects.toThrow(/added_servers\.0\.url/);
    expect(logs.lines.filter((l) => /damaged\.json/.test(String(l.msg))).length).toBe(2);
  });
});
