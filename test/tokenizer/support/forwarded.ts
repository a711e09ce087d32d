import { expect } from '@jest/globals';
import { postJson } from '../../support/router-app';
import type { FakeClusterHandle } from '../../support/router-cluster';

/** Sends a request through the router and returns the one body its context worker received for it. */
export async function forwarded(cluster: FakeClusterHandle, path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const before = cluster.ctx.received.length;
  const res = await postJson(`${cluster.router.url}${path}`, { model: 'served-name', max_tokens: 4, ...body });
  expect(res.status).toBe(200);
  const sent = cluster.ctx.received.slice(before).filter((r) => r.method === 'POST' && r.path.startsWith('/v1/'));
  expect(sent).toHaveLength(1);
  return sent[0].body!;
}
