import { afterEach, describe, expect, it } from '@jest/globals';
import { connect, type Socket } from 'node:net';
import type { AppConfigInput } from '../../src/config';
import { ServerRegistry } from '../../src/servers';
import { TOKEN, admin } from '../admin/admin-support';
import { startFakeCluster, type FakeCluster } from '../support/fake-cluster';
import { contextHandler, FakeWorker, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { unusedPort } from '../support/free-port';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { expectSettled } from './support/leaks';

/**
 * Clients that try to hurt the router or its workers: bodies it cannot serialise, input a
 * worker fails on, bodies and heads sent slowly, form posts, malformed URLs, huge ids.
 * None may take a worker out of rotation, hold resources, or get an answer not in the OpenAI
 * error shape.
 */
const body = { model: 'm', prompt: 'hello', max_tokens: 4 };
const QUIET_HEALTH = { startup_wait_s: 10, interval_s: 600, timeout_s: 5 };

function nested(depth: number): string {
  return `{"model":"m","prompt":"hi","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

/** Raw HTTP on a socket: what was answered before the router closed it. */
function rawExchange(url: string, write: (s: Socket) => void): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString()));
    socket.once('error', (err) => (data ? resolve(data) : reject(err)));
    socket.once('close', () => resolve(data));
    socket.once('connect', () => write(socket));
  });
}

function statusAndJson(raw: string): { status: number; json: { error?: { message: string; type: string; code: string | null } } } {
  const status = Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1]);
  const text = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return { status, json: JSON.parse(text) as { error?: { message: string; type: string; code: string | null } } };
}

describe('hostile clients', () => {
  let cluster: FakeCluster | undefined;
  let router: RunningRouter | undefined;
  const workers: FakeWorker[] = [];
  afterEach(async () => {
    await cluster?.close();
    await router?.close();
    for (const w of workers.splice(0)) await w.close();
    cluster = undefined;
    router = undefined;
  });
  const start = async (config: AppConfigInput = {}, handlers: { ctx?: FakeHandler; gen?: FakeHandler } = {}): Promise<FakeCluster> =>
    (cluster = await startFakeCluster({ health: QUIET_HEALTH, ...config }, undefined, handlers));

  it('answers 400 to a body nested too deeply to forward, and never counts it against the worker', async () => {
    const c = await start();
    for (let i = 0; i < 8; i++) {
      const res = await postJson(`${c.router.url}/v1/completions`, nested(10_000));
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_body' });
      expect(res.text).not.toContain('call stack');
    }
    const registry = c.router.app.get(ServerRegistry);
    expect(registry.list().map((s) => s.status)).toEqual(['ready', 'ready']);
    expect((await fetch(`${c.router.url}/health`)).status).toBe(200);
    expect((await postJson(`${c.router.url}/v1/completions`, body)).status).toBe(200);
    await expectSettled(c.router);
  });

  it('does not let input a worker fails on (500) take the only context server out of rotation', async () => {
    const poisoned: FakeHandler = (req, res) => {
      if (JSON.stringify(req.body).includes('poison')) return json(res, 500, { detail: 'Internal Server Error' });
      return contextHandler()(req, res, undefined as never);
    };
    const c = await start({ health: { ...QUIET_HEALTH, circuit_breaker: { failure_threshold: 3 } } }, { ctx: poisoned });
    for (let i = 0; i < 6; i++) {
      const res = await postJson(`${c.router.url}/v1/completions`, { ...body, prompt: 'poison' });
      expect(res.status).toBe(502);
    }
    expect(c.router.app.get(ServerRegistry).ready('context')).toHaveLength(1);
    expect((await fetch(`${c.router.url}/health`)).status).toBe(200);
    expect((await postJson(`${c.router.url}/v1/completions`, body)).status).toBe(200);
  });

  it('still takes out a server whose 500s another server contradicts', async () => {
    const broken = await new FakeWorker((_req, res) => json(res, 500, { detail: 'boom' })).start();
    const good = await new FakeWorker(contextHandler()).start();
    const gen = await new FakeWorker(generationHandler()).start();
    workers.push(broken, good, gen);
    router = await startRouter({
      context_servers: { urls: [broken.url, good.url] },
      generation_servers: { urls: [gen.url] },
      health: { ...QUIET_HEALTH, circuit_breaker: { failure_threshold: 2 } },
      max_retries: 1,
    });
    const registry = router.app.get(ServerRegistry);
    await waitFor(() => registry.ready('context').length === 2, 5_000, 'both context servers ready');
    for (let i = 0; i < 6; i++) expect((await postJson(`${router.url}/v1/completions`, body)).status).toBe(200);
    expect(registry.findByUrl('context', broken.url)?.status).toBe('unhealthy');
    expect(registry.findByUrl('context', broken.url)?.ejection?.reason).toBe('circuit_open');
  });

  it('answers 408 in the OpenAI shape to a body that never finishes (timeouts.client_body_s)', async () => {
    const c = await start({ timeouts: { client_body_s: 0.5, client_headers_s: 0.5 } });
    const raw = await rawExchange(c.router.url, (s) => s.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":'));
    const { status, json: j } = statusAndJson(raw);
    expect(status).toBe(408);
    expect(j.error).toMatchObject({ type: 'invalid_request_error', code: 'request_timeout' });
    expect(c.gen.requests('/v1/completions')).toHaveLength(0);
  });

  it('answers 408 to a request head that never finishes (timeouts.client_headers_s)', async () => {
    const c = await start({ timeouts: { client_headers_s: 0.5 } });
    const raw = await rawExchange(c.router.url, (s) => s.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n'));
    expect(statusAndJson(raw).status).toBe(408);
  });

  it('keeps answering a stream that lasts longer than the client timeouts', async () => {
    const slow: FakeHandler = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const timer = setInterval(() => {
        if (i++ < 8) return void res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
        clearInterval(timer);
        res.end('data: [DONE]\n\n');
      }, 150);
      void req;
    };
    const c = await start({ timeouts: { client_body_s: 0.4, client_headers_s: 0.4 } }, { gen: slow });
    const res = await fetch(`${c.router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
    expect((await res.text()).trim().endsWith('data: [DONE]')).toBe(true);
  });

  it.each([
    ['application/x-www-form-urlencoded', 'model=m&prompt=hello'],
    ['text/plain', JSON.stringify(body)],
    ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--x--\r\n'],
  ])('answers 415 to a %s post on the OpenAI routes', async (type, payload) => {
    const c = await start();
    const res = await fetch(`${c.router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': type }, body: payload });
    expect(res.status).toBe(415);
    expect((await res.json()) as unknown).toMatchObject({ error: { type: 'invalid_request_error', code: 'unsupported_media_type' } });
    expect(c.ctx.requests('/v1/completions')).toHaveLength(0);
  });

  it('accepts application/json with parameters', async () => {
    const c = await start();
    const res = await fetch(`${c.router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
  });

  it('answers malformed URLs, huge headers and long path segments in the OpenAI shape', async () => {
    const c = await start({ admin: { token: TOKEN } });
    const badUrl = await fetch(`${c.router.url}/admin/v1/servers/%E0%A4%A`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(badUrl.status).toBe(400);
    expect(((await badUrl.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    const longSegment = await fetch(`${c.router.url}/admin/v1/servers/${'x'.repeat(3000)}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(longSegment.status).toBe(414);
    expect(((await longSegment.json()) as { error: { code: string } }).error.code).toBe('uri_too_long');
    const raw = await rawExchange(c.router.url, (s) => s.write(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(20_000)}\r\n\r\n`));
    const big = statusAndJson(raw);
    expect(big.status).toBe(431);
    expect(big.json.error?.code).toBe('headers_too_large');
    const garbage = statusAndJson(await rawExchange(c.router.url, (s) => s.write('NOT HTTP AT ALL\r\n\r\n')));
    expect(garbage.status).toBe(400);
    expect(garbage.json.error?.type).toBe('invalid_request_error');
  });

  it('manages servers whose ids are longer than 100 characters', async () => {
    const c = await start({ admin: { token: TOKEN } });
    const host = `${'a'.repeat(60)}.${'b'.repeat(60)}.svc.cluster.local`;
    const added = await admin(c.router.url, 'POST', 'servers', { url: `http://${host}:8000`, role: 'generation' });
    expect(added.status).toBe(201);
    const id = added.body.id as string;
    expect(id.length).toBeGreaterThan(100);
    expect((await admin(c.router.url, 'GET', `servers/${id}`)).status).toBe(200);
    expect((await admin(c.router.url, 'DELETE', `servers/${id}?force=true`)).status).toBe(200);
    expect(c.router.app.get(ServerRegistry).get(id)).toBeUndefined();
  });

  it('refuses link-local and metadata hosts unless admin.allowed_hosts lists them', async () => {
    const c = await start({ admin: { token: TOKEN } });
    for (const url of ['http://169.254.169.254:80', 'http://[fd00:ec2::254]:80', 'http://[::ffff:169.254.169.254]:80', 'http://[fe80::1]:80']) {
      const res = await admin(c.router.url, 'POST', 'servers', { url, role: 'generation' });
      expect([url, res.status]).toEqual([url, 403]);
    }
    router = await startRouter({ generation_servers: { urls: [c.gen.url] }, health: QUIET_HEALTH, admin: { token: TOKEN, allowed_hosts: ['169.254.169.254'] } });
    expect((await admin(router.url, 'POST', 'servers', { url: 'http://169.254.169.254:80', role: 'generation' })).status).toBe(201);
  });

  it('keeps errno details of a refused host out of last_health', async () => {
    const c = await start({ admin: { token: TOKEN } });
    const port = await unusedPort();
    const added = await admin(c.router.url, 'POST', 'servers', { url: `http://127.0.0.1:${port}`, role: 'generation' });
    const id = added.body.id as string;
    let health: { error?: string } | null = null;
    await waitFor(async () => {
      health = (await admin(c.router.url, 'GET', `servers/${id}`)).body.last_health as { error?: string } | null;
      return health !== null;
    }, 5_000, 'a health check of the refused host');
    expect(health!.error).toBe('connection refused');
    expect(JSON.stringify(health)).not.toContain(String(port));
  });

  it('refuses connections beyond limits.max_connections', async () => {
    const c = await start({ limits: { max_connections: 2 } });
    const { port } = new URL(c.router.url);
    const open = async (): Promise<Socket> => {
      const s = connect(Number(port), '127.0.0.1');
      await new Promise((r) => s.once('connect', r));
      return s;
    };
    const held = [await open(), await open()];
    // The router has accepted both (one request each answered) before the third arrives.
    for (const s of held) {
      s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((r) => s.once('data', r));
    }
    const third = connect(Number(port), '127.0.0.1');
    const outcome = await new Promise<string>((resolve) => {
      third.once('connect', () => third.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'));
      third.once('data', () => resolve('answered'));
      third.once('close', () => resolve('closed'));
      third.once('error', () => resolve('closed'));
    });
    expect(outcome).toBe('closed');
    for (const s of held) s.destroy();
  });
});
