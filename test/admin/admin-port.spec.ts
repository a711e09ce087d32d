import { beforeAll, describe, expect, it } from '@jest/globals';
import { AdminPortHost } from '../../src/admin';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { startRouter } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { admin, complete, errorOf, TOKEN, whenReady } from './admin-support';

describe('admin API on its own port', () => {
  const cluster = useRouterCluster({
    workers: { a: generationHandler(), b: generationHandler() },
    config: (cluster) => ({ generation_servers: { urls: [cluster.a.url] }, admin: { token: TOKEN, port: 0, host: '127.0.0.1' } }),
  });
  let adminUrl: string;
  beforeAll(() => {
    adminUrl = cluster.router.app.get(AdminPortHost).url!;
  });

  it('listens on another loopback port', () => {
    expect(adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(adminUrl).not.toBe(cluster.router.url);
  });

  it('serves the API there, acting on the main app: an added server gets traffic', async () => {
    const added = await admin(adminUrl, 'POST', 'servers', { url: cluster.b.url, role: 'generation' });
    expect(added.status).toBe(201);
    await whenReady(cluster.router, added.body.id as string);
    await complete(cluster.router.url);
    await complete(cluster.router.url);
    expect(cluster.b.requests('/v1/completions')).toHaveLength(1);
    const list = await admin(adminUrl, 'GET', 'servers');
    expect((list.body.servers as unknown[]).length).toBe(2);
  });

  it('guards it with the token and answers errors as OpenAI JSON', async () => {
    const res = await admin(adminUrl, 'GET', 'servers', undefined, 'Bearer nope-nope-nope');
    expect(res.status).toBe(401);
    expect(errorOf(res)).toMatchObject({ type: 'authentication_error', code: 'invalid_token' });
    const bad = await admin(adminUrl, 'POST', 'servers', { url: 'gopher://x', role: 'generation' });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).param).toBe('url');
  });

  it('serves the OpenAPI document there', async () => {
    const res = await fetch(`${adminUrl}/admin/docs-json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/admin/v1/servers');
  });

  it('has no admin routes on the main port', async () => {
    for (const path of ['servers', 'routers', 'config']) {
      const res = await admin(cluster.router.url, 'GET', path);
      expect(res.status).toBe(404);
    }
    const docs = await fetch(`${cluster.router.url}/admin/docs-json`);
    expect(docs.status).toBe(404);
    await docs.body?.cancel();
    // The main port still serves clients.
    await complete(cluster.router.url);
  });
});

describe('admin API port lifecycle', () => {
  it('closes the admin port with the app', async () => {
    const gen = await new FakeWorker(generationHandler()).start();
    const router = await startRouter({ generation_servers: { urls: [gen.url] }, admin: { token: TOKEN, port: 0 } });
    const url = router.app.get(AdminPortHost).url!;
    expect((await admin(url, 'GET', 'servers')).status).toBe(200);
    await router.close();
    await expect(fetch(`${url}/admin/v1/servers`)).rejects.toThrow();
    await gen.close();
  });
});
