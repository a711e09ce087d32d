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

describe('JSON bodies that only look suspicious', () => {
  const cluster = useFakeCluster();

  it.each([
    ['a \\u escape', '{"model": "m", "prompt": "caf\\u00e9"}', 'café'],
    ['the word constructor in a value', '{"model": "m", "prompt": "the constructor: __proto__"}', 'the constructor: __proto__'],
    ['a byte-order mark', '\uFEFF{"model": "m", "prompt": "hello"}', 'hello'],
  ])('%s: served, the prompt forwarded as sent', async (_name, body, prompt) => {
    const before = cluster.ctx.requests('/v1/completions').length;
    const res = await postJson(`${cluster.router.url}/v1/completions`, body);
    expect(res.status).toBe(200);
    expect(cluster.ctx.requests('/v1/completions')[before].body?.prompt).toBe(prompt);
  });
});
