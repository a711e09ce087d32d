import { describe, expect, it } from '@jest/globals';
import { useFakeCluster } from '../support/router-cluster';
import { postJson } from '../support/router-app';

describe('smoke', () => {
  const cluster = useFakeCluster();

  it('serves a completion through both phases', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(200);
    expect(res.json.choices).toBeDefined();
    expect(cluster.gen.requests('/v1/completions')[0].body?.disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 777 });
  });
});
