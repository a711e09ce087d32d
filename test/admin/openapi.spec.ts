import { beforeAll, describe, expect, it } from '@jest/globals';
import { generationHandler } from '../support/fake-worker';
import { useRouterCluster } from '../support/router-cluster';
import { TOKEN } from './admin-support';

/** Every admin route, as the controllers declare it. */
const ENDPOINTS: Array<[string, string]> = [
  ['get', '/admin/v1/servers'],
  ['post', '/admin/v1/servers'],
  ['get', '/admin/v1/servers/{id}'],
  ['post', '/admin/v1/servers/{id}/drain'],
  ['post', '/admin/v1/servers/{id}/resume'],
  ['delete', '/admin/v1/servers/{id}'],
  ['get', '/admin/v1/routers'],
  ['get', '/admin/v1/routers/{pool}'],
  ['put', '/admin/v1/routers/{pool}'],
  ['get', '/admin/v1/config'],
  ['get', '/admin/v1/stats'],
  ['get', '/admin/v1/cluster'],
];

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown>; parameters?: Array<{ name: string; in: string }> }>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string }> };
}

describe('admin OpenAPI document', () => {
  const cluster = useRouterCluster({
    workers: { gen: generationHandler() },
    config: (cluster) => ({ generation_servers: { urls: [cluster.gen.url] }, admin: { token: TOKEN } }),
  });
  let doc: OpenApiDoc;
  beforeAll(async () => {
    const res = await fetch(`${cluster.router.url}/admin/docs-json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    doc = (await res.json()) as OpenApiDoc;
  });

  it('lists every admin endpoint and nothing else', () => {
    expect(doc.openapi).toMatch(/^3\./);
    const listed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => [m, path]));
    expect(listed.sort()).toEqual([...ENDPOINTS].sort());
  });

  it('declares bearer authentication on every operation, with a 401 answer', () => {
    expect(Object.values(doc.components.securitySchemes)).toEqual([expect.objectContaining({ type: 'http', scheme: 'bearer' })]);
    const scheme = Object.keys(doc.components.securitySchemes)[0];
    for (const [method, path] of ENDPOINTS) {
      const op = doc.paths[path][method];
      expect(op.security).toEqual([{ [scheme]: [] }]);
      expect(op.responses['401']).toBeDefined();
    }
  });

  it('documents the drain and delete flags', () => {
    expect(doc.paths['/admin/v1/servers/{id}/drain'].post.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'remove', in: 'query' })]));
    expect(doc.paths['/admin/v1/servers/{id}'].delete.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'force', in: 'query' })]));
  });
});
