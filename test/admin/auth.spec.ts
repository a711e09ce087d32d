import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { startRouter, type RunningRouter } from '../support/router-app';
import { admin, errorOf, TOKEN } from './admin-support';

describe('admin API authentication', () => {
  let gen: FakeWorker;
  beforeAll(async () => {
    gen = await new FakeWorker(generationHandler()).start();
  });
  afterAll(async () => {
    await gen?.close();
  });

  describe('without a configured token', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter({ generation_servers: { urls: [gen.url] } });
    });
    afterAll(async () => {
      await router?.close();
    });

    it('is not served at all, whatever the request carries', async () => {
      for (const [method, path] of [['GET', 'servers'], ['POST', 'servers'], ['GET', 'config'], ['PUT', 'routers/generation']] as const) {
        const res = await admin(router.url, method, path, method === 'GET' ? undefined : { url: gen.url, role: 'generation' });
        expect(res.status).toBe(404);
        expect(errorOf(res)).toMatchObject({ type: 'not_found_error' });
      }
      const docs = await fetch(`${router.url}/admin/docs-json`);
      expect(docs.status).toBe(404);
      await docs.body?.cancel();
    });
  });

  describe('with a token', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter({ generation_servers: { urls: [gen.url] }, admin: { token: TOKEN } });
    });
    afterAll(async () => {
      await router?.close();
    });

    it('answers 401 with a bearer challenge when the token is missing', async () => {
      const res = await admin(router.url, 'GET', 'servers', undefined, null);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(errorOf(res)).toEqual({ message: expect.any(String), type: 'authentication_error', param: null, code: 'missing_token' });
    });

    it('answers 401 to a wrong token, a token of another length, or another scheme', async () => {
      for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}x`, `Bearer ${TOKEN}${TOKEN}`, 'Bearer x', `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}`, TOKEN]) {
        const res = await admin(router.url, 'GET', 'servers', undefined, authorization);
        expect(res.status).toBe(401);
        expect(errorOf(res).type).toBe('authentication_error');
      }
    });

    it('refuses a mutating call without the token and changes nothing', async () => {
      const res = await admin(router.url, 'POST', 'servers', { url: 'http://127.0.0.1:1', role: 'generation' }, 'Bearer wrong-token');
      expect(res.status).toBe(401);
      const list = await admin(router.url, 'GET', 'servers');
      expect((list.body.servers as unknown[]).length).toBe(1);
    });

    it('serves the API with the right token (scheme case-insensitive)', async () => {
      const res = await admin(router.url, 'GET', 'servers', undefined, `bearer ${TOKEN}`);
      expect(res.status).toBe(200);
      expect(res.body.servers).toEqual([
        expect.objectContaining({ url: gen.url, role: 'generation', source: 'config', state: 'ready', active_requests: 0, active_tokens: 0, kv_blocks_known: 0 }),
      ]);
    });
  });
});
