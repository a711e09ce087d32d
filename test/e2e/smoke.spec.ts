import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, type RunningRouter } from '../support/router-app';

describe('smoke', () => {
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let router: RunningRouter;
  beforeAll(async () => {
    ctx = await new FakeWorker(contextHandler()).start();
    gen = await new FakeWorker(generationHandler()).start();
    router = await startRouter({ context_servers: { urls: [ctx.url] }, generation_servers: { urls: [gen.url] } });
  });
  afterAll(async () => {
    await router?.close();
    await ctx?.close();
    await gen?.close();
  });
  it('serves a completion through both phases', async () => {
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(200);
    expect(res.json.choices).toBeDefined();
    expect(gen.requests('/v1/completions')[0].body?.disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 777 });
  });
});
