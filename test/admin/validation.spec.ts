import { describe, expect, it } from '@jest/globals';
import { generationHandler } from '../support/fake-worker';
import { useRouterCluster } from '../support/router-cluster';
import { admin, errorOf, TestPoliciesModule, TOKEN } from './admin-support';

describe('admin API input validation', () => {
  const cluster = useRouterCluster({
    workers: { gen: generationHandler() },
    config: (cluster) => ({
      generation_servers: { urls: [cluster.gen.url] },
      admin: { token: TOKEN, allowed_hosts: ['127.0.0.1', 'localhost', '*.workers.internal'] },
    }),
    imports: [TestPoliciesModule],
  });

  const servers = async (): Promise<Array<Record<string, unknown>>> => (await admin(cluster.router.url, 'GET', 'servers')).body.servers as Array<Record<string, unknown>>;

  it.each([
    ['a scheme other than http(s)', { url: 'ftp://127.0.0.1:21', role: 'generation' }, 'url'],
    ['a path', { url: 'http://127.0.0.1:9000/v1', role: 'generation' }, 'url'],
    ['credentials', { url: 'http://user:pw@127.0.0.1:9000', role: 'generation' }, 'url'],
    ['not a URL', { url: 'http://exa mple:80', role: 'generation' }, 'url'],
    ['a number', { url: 9000, role: 'generation' }, 'url'],
    ['no url', { role: 'generation' }, 'url'],
    ['an unknown role', { url: 'http://127.0.0.1:9000', role: 'prefill' }, 'role'],
    ['an unknown field', { url: 'http://127.0.0.1:9000', role: 'generation', weight: 2 }, null],
  ])('POST servers with %s is a 400 naming the field', async (_what, body, param) => {
    const res = await admin(cluster.router.url, 'POST', 'servers', body);
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ type: 'invalid_request_error', param });
    expect(await servers()).toHaveLength(1);
  });

  it('answers 400 to a body that is not JSON or not an object', async () => {
    const bad = await admin(cluster.router.url, 'POST', 'servers', '{"url": ');
    expect(bad.status).toBe(400);
    expect(errorOf(bad).code).toBe('invalid_json');
    const array = await admin(cluster.router.url, 'POST', 'servers', [{ url: 'http://127.0.0.1:9000', role: 'generation' }]);
    expect(array.status).toBe(400);
    expect(errorOf(array).code).toBe('invalid_body');
  });

  it('refuses a host outside admin.allowed_hosts with 403', async () => {
    const res = await admin(cluster.router.url, 'POST', 'servers', { url: 'http://10.1.2.3:8001', role: 'generation' });
    expect(res.status).toBe(403);
    expect(errorOf(res)).toMatchObject({ param: 'url', code: 'host_not_allowed' });
    // A wildcard entry covers subdomains, not the bare domain or look-alikes.
    expect((await admin(cluster.router.url, 'POST', 'servers', { url: 'http://workers.internal:8001', role: 'generation' })).status).toBe(403);
    expect((await admin(cluster.router.url, 'POST', 'servers', { url: 'http://evilworkers.internal:8001', role: 'generation' })).status).toBe(403);
    expect(await servers()).toHaveLength(1);
  });

  it('answers 409 to a server already registered, however its URL is written', async () => {
    const port = new URL(cluster.gen.url).port;
    for (const url of [cluster.gen.url, `127.0.0.1:${port}`, `HTTP://127.0.0.1:${port}/`]) {
      const res = await admin(cluster.router.url, 'POST', 'servers', { url, role: 'generation' });
      expect(res.status).toBe(409);
      expect(errorOf(res)).toMatchObject({ param: 'url', code: 'server_exists' });
    }
    expect(await servers()).toHaveLength(1);
  });

  it('accepts the same URL in the other pool and TensorRT-LLM host:port addresses', async () => {
    const port = new URL(cluster.gen.url).port;
    const res = await admin(cluster.router.url, 'POST', 'servers', { url: `localhost:${port}`, role: 'context' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: `context-localhost-${port}`, url: `http://localhost:${port}`, role: 'context', source: 'admin' });
    const removed = await admin(cluster.router.url, 'DELETE', `servers/context-localhost-${port}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ id: `context-localhost-${port}`, deleted: true });
  });

  it('answers 404 for an unknown server id and 400 for a bad flag', async () => {
    for (const [method, path] of [['GET', 'servers/nope'], ['POST', 'servers/nope/drain'], ['DELETE', 'servers/nope']]) {
      const res = await admin(cluster.router.url, method, path);
      expect(res.status).toBe(404);
      expect(errorOf(res)).toMatchObject({ type: 'not_found_error', code: 'server_not_found' });
    }
    const id = (await servers())[0].id as string;
    const res = await admin(cluster.router.url, 'DELETE', `servers/${id}?force=yes`);
    expect(res.status).toBe(400);
    expect(errorOf(res).param).toBe('force');
    expect(await servers()).toHaveLength(1);
  });

  it('answers 400 to an unknown router type, bad arguments or an unknown pool, and keeps the policy', async () => {
    const unknown = await admin(cluster.router.url, 'PUT', 'routers/generation', { type: 'fastest_guess' });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown)).toMatchObject({ param: 'type', code: 'unknown_router_type' });
    expect(errorOf(unknown).message).toContain('first_server');

    const badArg = await admin(cluster.router.url, 'PUT', 'routers/generation', { type: 'first_server', label: '' });
    expect(badArg.status).toBe(400);
    expect(errorOf(badArg)).toMatchObject({ code: 'invalid_router_args' });
    expect(errorOf(badArg).message).toContain('label');

    const extraArg = await admin(cluster.router.url, 'PUT', 'routers/generation', { type: 'round_robin', bogus: 1 });
    expect(extraArg.status).toBe(400);
    expect(errorOf(extraArg).code).toBe('invalid_router_args');

    const noType = await admin(cluster.router.url, 'PUT', 'routers/generation', { label: 'x' });
    expect(noType.status).toBe(400);
    expect(errorOf(noType).param).toBe('type');

    const pool = await admin(cluster.router.url, 'PUT', 'routers/prefill', { type: 'round_robin' });
    expect(pool.status).toBe(400);
    expect(errorOf(pool).param).toBe('pool');

    const routers = await admin(cluster.router.url, 'GET', 'routers');
    expect(routers.body.routers).toEqual([
      expect.objectContaining({ pool: 'context', type: 'round_robin' }),
      expect.objectContaining({ pool: 'generation', type: 'round_robin' }),
    ]);
  });

  it('switches a policy with valid arguments and shows it', async () => {
    const res = await admin(cluster.router.url, 'PUT', 'routers/generation', { type: 'first_server', label: 'pinned' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ pool: 'generation', type: 'first_server', args: { label: 'pinned' }, state: { policy: 'first_server', in_flight: 0 } });
    const routers = await admin(cluster.router.url, 'GET', 'routers');
    expect(routers.body.available_policies).toEqual(expect.arrayContaining(['round_robin', 'first_server']));
    const back = await admin(cluster.router.url, 'PUT', 'routers/generation', { type: 'round_robin' });
    expect(back.status).toBe(200);
  });

  it('serves the effective config with secrets redacted', async () => {
    const res = await admin(cluster.router.url, 'GET', 'config');
    expect(res.status).toBe(200);
    const config = res.body.config as Record<string, Record<string, unknown>>;
    expect(config.admin.token).toBe('***');
    expect(JSON.stringify(res.body)).not.toContain(TOKEN);
    expect(config.generation_servers.urls).toEqual([cluster.gen.url]);
    expect(config.limits.max_body_bytes).toEqual(expect.any(Number));
    expect(res.body.admin_changes).toMatchObject({ version: 1, routers: { generation: { type: 'round_robin' } } });
  });
});
