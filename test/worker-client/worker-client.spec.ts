import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { Test, type TestingModule } from '@nestjs/testing';
import { HttpSessionModule } from '../../src/http-session';
import { WorkerClient, WorkerClientModule } from '../../src/worker-client';
import { FakeWorker, json } from '../support/fake-worker';
import { unusedPort } from '../support/free-port';
import { waitFor } from '../support/router-app';
import { endless } from '../support/endless-answer';

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

  it('gives a drain piece by piece as it arrives, a character split between chunks whole', async () => {
    const text = `[{"event_id":1,"data":{"type":"updated","block_hash":1,"note":"${'é€😀'.repeat(50_000)}"}}]`;
    const bytes = Buffer.from(text);
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      // Chunks of 7 bytes and more: most cut a multi-byte character.
      for (let at = 0; at < bytes.length; at += 7 + (at % 5000)) res.write(bytes.subarray(at, at + 7 + (at % 5000)));
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const answer = await client.openKvEvents(url, 2000);
      const pieces: string[] = [];
      for (let piece = await answer.next(); piece !== undefined; piece = await answer.next()) pieces.push(piece);
      expect(pieces.join('')).toBe(text);
      expect(await answer.whole()).toBe(text);
      await expect(client.openKvEvents(url, 2000, 1000).then((a) => a.whole())).rejects.toThrow('answer larger than 1000 bytes');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a dead worker is a negative health result without address details, and a failed drain', async () => {
    const dead = `http://127.0.0.1:${await unusedPort()}`;
    const health = await client.health(dead, 2000);
    expect(health).toMatchObject({ ok: false, error: 'connection refused' });
    expect(health.status).toBeUndefined();
    await expect(client.drainKvEvents(dead, 2000)).rejects.toThrow();
  });
});

describe('WorkerClient against a worker whose control answers never end', () => {
  let app: TestingModule;
  let client: WorkerClient;
  let server: Server;
  let url: string;
  let openAnswers = 0;

  beforeAll(async () => {
    // Every path (/health, /server_info, /kv_cache_events...): 64 KiB chunks for as long as the connection stays open, no length given.
    server = createServer((req, res) => {
      openAnswers++;
      res.once('close', () => openAnswers--);
      endless(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    app = await Test.createTestingModule({ imports: [HttpSessionModule.register({ maxControlAnswerBytes: 1024 * 1024 }), WorkerClientModule] }).compile();
    await app.init();
    client = app.get(WorkerClient);
  });
  afterAll(async () => {
    await app?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('stops reading at the limit and closes the connection: health fails, control calls and drains throw', async () => {
    const health = await client.health(url, 10_000);
    expect(health.ok).toBe(false);
    expect(health.error).toBe('answer too large');
    await expect(client.serverInfo(url, 10_000)).rejects.toThrow('maxContentLength size of 1048576 exceeded');
    await expect(client.perfMetrics(url, 10_000)).rejects.toThrow('maxContentLength size of 1048576 exceeded');
    await expect(client.drainKvEvents(url, 10_000, 2 * 1024 * 1024)).rejects.toThrow('answer larger than 2097152 bytes');
    await waitFor(() => openAnswers === 0, 10_000, 'the worker sees every connection closed');
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
