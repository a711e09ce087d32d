import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Test, type TestingModule } from '@nestjs/testing';
import { HttpSessionModule } from '../../src/http-session';
import { WorkerClient, WorkerClientModule } from '../../src/worker-client';
import { FakeWorker, json } from '../support/fake-worker';
import { unusedPort } from '../support/free-port';

describe('WorkerClient against a real worker socket', () => {
  let app: TestingModule;
  let client: WorkerClient;
  let worker: FakeWorker;

  beforeAll(async () => {
    worker = await new FakeWorker((req, res) => {
      if (req.path === '/perf_metrics') return json(res, 200, [{ ctx_request_id: 7 }]);
      json(res, 404, { detail: 'Not Found' });
    }).start();
    app = await Test.createTestingModule({ imports: [HttpSessionModule.register(), WorkerClientModule] }).compile();
    await app.init();
    client = app.get(WorkerClient);
  });
  afterAll(async () => {
    await app?.close();
    await worker?.close();
  });

  it('reads /health, /server_info (404: the defaults), /perf_metrics', async () => {
    const health = await client.health(worker.url, 2000);
    expect(health).toMatchObject({ ok: true, status: 200 });
    worker.serverInfo = { tokens_per_block: 16 };
    expect(await client.serverInfo(worker.url, 2000)).toEqual({ tokens_per_block: 16 });
    worker.serverInfoStatus = 404;
    expect(await client.serverInfo(worker.url, 2000)).toBeUndefined();
    worker.serverInfoStatus = 500;
    await expect(client.serverInfo(worker.url, 2000)).rejects.toThrow('500');
    expect(await client.perfMetrics(worker.url, 2000)).toEqual([{ ctx_request_id: 7 }]);
  });

  it('drains /kv_cache_events as text, 64-bit hashes untouched', async () => {
    const body = '[{"event_id":1,"data":{"type":"removed","block_hashes":[18446744073709551615]}}]';
    worker.kvEvents = () => body;
    expect(await client.drainKvEvents(worker.url, 2000)).toBe(body);
    const post = worker.requests('/kv_cache_events').at(-1)!;
    expect(post.method).toBe('POST');
  });

  it('a dead worker is a negative health result without address details, and a failed drain', async () => {
    const dead = `http://127.0.0.1:${await unusedPort()}`;
    const health = await client.health(dead, 2000);
    expect(health).toMatchObject({ ok: false, error: 'connection refused' });
    expect(health.status).toBeUndefined();
    await expect(client.drainKvEvents(dead, 2000)).rejects.toThrow();
  });
});

describe('one HTTP client', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  const src = join(process.cwd(), 'src');
  const uses = (pattern: RegExp): string[] => files(src).filter((f) => pattern.test(readFileSync(f, 'utf8'))).map((f) => relative(src, f));

  it('control calls to workers go through the worker client; only the session builds a client', () => {
    expect(uses(/\bsession\.(axios|http)\b/)).toEqual(['worker-client/worker-client.ts']);
    expect(uses(/axios\.create\(|new (Agent|Pool|Client|HttpService)\(/)).toEqual(['http-session/http-session.provider.ts']);
  });
});
