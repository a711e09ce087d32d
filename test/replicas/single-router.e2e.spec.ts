import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startFakeCluster, type FakeCluster } from '../support/fake-cluster';
import { TOKEN } from './support/replica-cluster';

describe('a single router (no cluster section)', () => {
  let cluster: FakeCluster;
  beforeAll(async () => {
    cluster = await startFakeCluster({ admin: { token: TOKEN } });
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('needs no bus: /cluster_info has no cluster section and the admin view says so', async () => {
    const info = (await (await fetch(`${cluster.router.url}/cluster_info`)).json()) as Record<string, unknown>;
    expect(info.is_ready).toBe(true);
    expect(info.cluster).toBeUndefined();
    const res = await fetch(`${cluster.router.url}/admin/v1/cluster`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ enabled: false });
    expect((await fetch(`${cluster.router.url}/admin/v1/cluster`)).status).toBe(401);
  });
});
