import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { useFakeCluster, type FakeClusterHandle } from '../support/router-cluster';
import { postJson } from '../support/router-app';
import { fixtureCases, fixtureDir } from '../tokenizer/support/fixtures';
import { expectSettled } from './support/leaks';

/**
 * A request's own `chat_template`: refused unless `allow_request_chat_template: true`
 * (TensorRT-LLM's default-deny); when allowed, a router that tokenizes renders it in the
 * sandbox, so templates written to hurt (huge loops, huge prompts, bad syntax) get a 400 and
 * leave the router serving.
 */
const MODEL = 'llama3';
const kvRouter = { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, tokenizer_dir: fixtureDir(MODEL) };
const chat = (extra: Record<string, unknown> = {}) => ({ model: 'served', max_tokens: 4, messages: [{ role: 'user', content: 'hello' }], ...extra });
const modelTemplate = (JSON.parse(readFileSync(path.join(fixtureDir(MODEL), 'tokenizer_config.json'), 'utf8')) as { chat_template: string }).chat_template;

async function refused(cluster: FakeClusterHandle, body: Record<string, unknown>, code: string, route = 'chat/completions'): Promise<string> {
  const before = cluster.ctx.received.length + cluster.gen.received.length;
  const res = await postJson(`${cluster.url}/v1/${route}`, body);
  expect(res.status).toBe(400);
  const error = res.json.error as { type: string; param: string | null; code: string; message: string };
  expect(error).toMatchObject({ type: 'invalid_request_error', param: 'chat_template', code });
  expect(error.message).toMatch(/chat_template/);
  expect(error.message).not.toMatch(/malformed JSON/);
  expect(cluster.ctx.received.length + cluster.gen.received.length).toBe(before);
  return error.message;
}

async function stillServes(cluster: FakeClusterHandle): Promise<void> {
  expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
  expect((await postJson(`${cluster.url}/v1/chat/completions`, chat())).status).toBe(200);
  await expectSettled(cluster.router);
}

describe('per-request chat templates, by default', () => {
  const cluster = useFakeCluster({ context_servers: { router: kvRouter } });

  it('are refused with a 400 in the OpenAI shape on every route, before any worker sees them', async () => {
    const message = await refused(cluster, chat({ chat_template: '{{ messages[0].content }}' }), 'chat_template_not_allowed');
    expect(message).toMatch(/allow_request_chat_template/);
    await refused(cluster, { model: 'served', prompt: 'hi', chat_template: 'x' }, 'chat_template_not_allowed', 'completions');
    await refused(cluster, chat({ chat_template: '' }), 'chat_template_not_allowed');
    await stillServes(cluster);
  });

  it('a null chat_template is no template', async () => {
    expect((await postJson(`${cluster.url}/v1/chat/completions`, chat({ chat_template: null }))).status).toBe(200);
  });
});

describe('per-request chat templates, allowed', () => {
  const cluster = useFakeCluster({ allow_request_chat_template: true, context_servers: { router: kvRouter } });

  it('are rendered as transformers renders them: the ids workers get are the model template ids', async () => {
    const c = fixtureCases(MODEL).find((x) => x.name === 'chat_multi_turn')!;
    const before = cluster.ctx.received.length;
    const res = await postJson(`${cluster.url}/v1/chat/completions`, { ...c.body, model: 'served', max_tokens: 4, chat_template: modelTemplate });
    expect(res.status).toBe(200);
    const sent = cluster.ctx.received.slice(before).find((r) => r.path === '/v1/chat/completions')!;
    expect(sent.body?.prompt_token_ids).toEqual(c.ids);
    expect(sent.body?.chat_template).toBe(modelTemplate);
  }, 60_000);

  it('a range of a billion items is a 400, and the router keeps serving', async () => {
    await refused(cluster, chat({ chat_template: '{% for i in range(1000000000) %}x{% endfor %}' }), 'chat_template_too_many_loops');
    await stillServes(cluster);
  });

  it('nested loops are stopped while /health keeps answering', async () => {
    const slow = '{% for i in range(100000) %}{% for j in range(100000) %}{{ (messages|tojson)|length }}{% endfor %}{% endfor %}';
    let settled = false;
    const hostile = postJson(`${cluster.url}/v1/chat/completions`, chat({ chat_template: slow, messages: [{ role: 'user', content: 'z'.repeat(20_000) }] }));
    void hostile.finally(() => (settled = true));
    let answered = 0;
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
      if (!settled) answered++;
    }
    const res = await hostile;
    expect(res.status).toBe(400);
    expect((res.json.error as { code: string }).code).toMatch(/^chat_template_too_(slow|many_loops)$/);
    expect(answered).toBe(5);
    await stillServes(cluster);
  }, 30_000);

  it('a template that renders a huge prompt is a 400', async () => {
    const huge = '{% for i in range(100000) %}{% for j in range(100) %}{{ messages[0].content }}{% endfor %}{% endfor %}';
    await refused(cluster, chat({ chat_template: huge, messages: [{ role: 'user', content: 'q'.repeat(1000) }] }), 'chat_template_too_large');
    await stillServes(cluster);
  }, 30_000);

  it('a template that does not parse is a 400 naming the template, not malformed JSON', async () => {
    const message = await refused(cluster, chat({ chat_template: '{% for %}' }), 'invalid_chat_template');
    expect(message).toMatch(/^chat_template: does not parse/);
    await stillServes(cluster);
  });
});
