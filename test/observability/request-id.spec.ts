import { beforeAll, describe, expect, it } from '@jest/globals';
import { FakeWorker, generationHandler, json } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useFakeCluster } from '../support/router-cluster';
import { ServerRegistry } from '../../src/servers';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('x-request-id', () => {
  const cluster = useFakeCluster({ max_retries: 0 });
  beforeAll(async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    await waitFor(() => registry.ready('generation').length === 1 && registry.ready('context').length === 1, 10_000, 'servers ready');
  });

  const lastCall = (w: FakeWorker): string | string[] | undefined => w.requests('/v1/completions').at(-1)?.headers['x-request-id'];

  it('keeps a given id: in the answer and at both workers', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi' }, { 'x-request-id': 'client-id-42' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('client-id-42');
    expect(lastCall(cluster.ctx)).toBe('client-id-42');
    expect(lastCall(cluster.gen)).toBe('client-id-42');
  });

  it('generates one when none is given, the same for the client and the workers', async () => {
    const res = await fetch(`${cluster.router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'hi', stream: true }),
    });
    await res.text();
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(UUID);
    expect(lastCall(cluster.ctx)).toBe(id);
    expect(lastCall(cluster.gen)).toBe(id);
  });

  it('replaces an id that is too long or not printable', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi' }, { 'x-request-id': 'x'.repeat(500) });
    expect(res.headers.get('x-request-id')).toMatch(UUID);
    expect(lastCall(cluster.gen)).toBe(res.headers.get('x-request-id'));
    const odd = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi' }, { 'x-request-id': 'a b{c}' });
    expect(odd.headers.get('x-request-id')).toMatch(UUID);
  });

  it('is on error answers and on the other endpoints too', async () => {
    const id = { 'x-request-id': 'err-1' };
    const invalid = await postJson(`${cluster.router.url}/v1/completions`, { prompt: 'no model' }, id);
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-request-id')).toBe('err-1');
    const malformed = await postJson(`${cluster.router.url}/v1/completions`, '{"model": ', id);
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get('x-request-id')).toBe('err-1');
    for (const path of ['/health', '/cluster_info', '/metrics', '/no/such/route']) {
      const res = await fetch(`${cluster.router.url}${path}`, { headers: id });
      await res.arrayBuffer();
      expect([path, res.headers.get('x-request-id')]).toEqual([path, 'err-1']);
    }
    cluster.gen.handler = (_req, res) => json(res, 500, { error: 'boom' });
    try {
      const failed = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi' }, { 'x-request-id': 'err-2' });
      expect(failed.status).toBe(502);
      expect(failed.headers.get('x-request-id')).toBe('err-2');
      expect(lastCall(cluster.gen)).toBe('err-2');
    } finally {
      cluster.gen.handler = generationHandler();
    }
  });
});
