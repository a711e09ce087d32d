import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pack } from 'msgpackr';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { SimCluster, SimWorker, startSimCluster, startSimWorker } from '../../src/simulator';
import { getTokenizer } from '../../src/tokenizer';
import { getJson, postJson, postSse, range } from './sim-test-helpers';

describe('simulated worker: disaggregated protocol over real sockets', () => {
  let cluster: SimCluster;
  let mixed: SimWorker;
  let ctxUrl: string;
  let genUrl: string;

  beforeAll(async () => {
    cluster = await startSimCluster({ context: 1, generation: 2 });
    mixed = await startSimWorker({ role: 'mixed' });
    ctxUrl = cluster.contextUrls[0];
    genUrl = cluster.generationUrls[0];
  });

  afterAll(async () => {
    await cluster.close();
    await mixed.close();
  });

  it('serves health, server_info and models', async () => {
    const health = await fetch(`${ctxUrl}/health`);
    expect(health.status).toBe(200);
    const info = await getJson(`${ctxUrl}/server_info`);
    expect(info.body).toMatchObject({ kv_cache_hash_algo: 'v1_block_key', server_role: 'context' });
    const models = await getJson(`${genUrl}/v1/models`);
    expect(models.body).toMatchObject({ object: 'list', data: [{ id: 'sim-model', object: 'model' }] });
    expect(cluster.contextUrls[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers context_only with one first token and disaggregated_params, then generation_only continues it', async () => {
    const prompt = range(1000, 1100);
    const ctx = await postJson(`${ctxUrl}/v1/completions`, {
      model: 'm',
      prompt,
      max_tokens: 8,
      stream: false,
      stream_options: null,
      disaggregated_params: { request_type: 'context_only', disagg_request_id: 4242 },
    });
    expect(ctx.status).toBe(200);
    const choice = ctx.body.choices[0];
    expect(ctx.body.object).toBe('text_completion');
    expect(choice.finish_reason).toBe('length');
    expect(choice.disaggregated_params).toMatchObject({
      request_type: 'context_only',
      disagg_request_id: 4242,
      draft_tokens: null,
    });
    expect(choice.disaggregated_params.first_gen_tokens).toHaveLength(1);
    expect(typeof choice.disaggregated_params.ctx_request_id).toBe('number');
    expect(typeof choice.disaggregated_params.encoded_opaque_state).toBe('string');
    expect(ctx.body.prompt_token_ids).toEqual(prompt);
    expect(ctx.body.usage).toEqual({
      prompt_tokens: 100,
      completion_tokens: 1,
      total_tokens: 101,
      prompt_tokens_details: { cached_tokens: 0 },
    });

    const gen = await postJson(`${genUrl}/v1/completions`, {
      model: 'm',
      prompt: ctx.body.prompt_token_ids,
      max_tokens: 8,
      disaggregated_params: { ...choice.disaggregated_params, request_type: 'generation_only' },
    });
    expect(gen.status).toBe(200);
    expect(gen.body.usage.completion_tokens).toBe(8);
    expect(gen.body.choices[0].finish_reason).toBe('length');
    expect(gen.body.choices[0].text.startsWith(choice.text)).toBe(true);
    expect(gen.body.choices[0].disaggregated_params).toBeUndefined();

    // Aggregated serving of the same prompt produces the same text.
    const plain = await postJson(`${mixed.url}/v1/completions`, { model: 'm', prompt, max_tokens: 8 });
    expect(plain.body.choices[0].text).toBe(gen.body.choices[0].text);
    expect(cluster.generationWorkers[0].received.at(-1)).toMatchObject({
      disaggregated_params: { request_type: 'generation_only', disagg_request_id: 4242 },
    });
  });

  it('rejects a generation_only request whose ctx_request_id no context worker published (registry check)', async () => {
    const res = await postJson(`${genUrl}/v1/completions`, {
      prompt: [1, 2, 3],
      disaggregated_params: { request_type: 'generation_only', ctx_request_id: 987654321, first_gen_tokens: [5] },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ object: 'error', code: 400 });
    expect(res.body.message).toContain('987654321');
    expect(cluster.generationWorkers[0].stats.requests.rejected).toBeGreaterThan(0);
  });

  it('consumes a context result once its generation completed', async () => {
    const ctx = await postJson(`${ctxUrl}/v1/completions`, {
      prompt: range(5, 50),
      disaggregated_params: { request_type: 'context_only' },
    });
    const params = { ...ctx.body.choices[0].disaggregated_params, request_type: 'generation_only' };
    const first = await postJson(`${cluster.generationUrls[1]}/v1/completions`, { prompt: range(5, 50), disaggregated_params: params });
    expect(first.status).toBe(200);
    const again = await postJson(`${cluster.generationUrls[0]}/v1/completions`, { prompt: range(5, 50), disaggregated_params: params });
    expect(again.status).toBe(400);
  });

  it('accepts any ctx_request_id in blind mode', async () => {
    const blind = await startSimWorker({ role: 'generation', ctxCheck: 'blind', tokenizer: 'bytes' });
    try {
      const res = await postJson(`${blind.url}/v1/completions`, {
        prompt: [1, 2, 3],
        max_tokens: 3,
        disaggregated_params: { request_type: 'generation_only', ctx_request_id: 1, first_gen_tokens: [101] },
      });
      expect(res.status).toBe(200);
      expect(res.body.choices[0].text.startsWith('e')).toBe(true); // byte 101
      expect(res.body.usage.completion_tokens).toBe(3);
    } finally {
      await blind.close();
    }
  });

  it('refuses requests of the wrong phase for its role', async () => {
    const toGen = await postJson(`${genUrl}/v1/completions`, { prompt: [1, 2], disaggregated_params: { request_type: 'context_only' } });
    expect(toGen.status).toBe(400);
    const toCtx = await postJson(`${ctxUrl}/v1/completions`, {
      prompt: [1, 2],
      disaggregated_params: { request_type: 'generation_only', ctx_request_id: 1 },
    });
    expect(toCtx.status).toBe(400);
  });

  it('reports cached tokens for a repeated prefix', async () => {
    const w = await startSimWorker({ tokensPerBlock: 32 });
    try {
      const base = range(2000, 2100); // 99 keyed tokens: blocks 32, 32, 32, 3
      const first = await postJson(`${w.url}/v1/completions`, { prompt: base });
      expect(first.body.usage.prompt_tokens_details.cached_tokens).toBe(0);
      const same = await postJson(`${w.url}/v1/completions`, { prompt: base });
      expect(same.body.usage.prompt_tokens_details.cached_tokens).toBe(99);
      const longer = await postJson(`${w.url}/v1/completions`, { prompt: [...base.slice(0, 70), ...range(1, 40)] });
      expect(longer.body.usage.prompt_tokens_details.cached_tokens).toBe(64);
    } finally {
      await w.close();
    }
  });

  it('generates deterministic text, honours max_tokens (default 16) and stop strings', async () => {
    const prompt = range(300, 340);
    const a = await postJson(`${mixed.url}/v1/completions`, { prompt });
    const b = await postJson(`${mixed.url}/v1/completions`, { prompt });
    expect(a.body.choices[0].text).toBe(b.body.choices[0].text);
    expect(a.body.usage.completion_tokens).toBe(16);
    expect(a.body.choices[0].finish_reason).toBe('length');
    const other = await postJson(`${mixed.url}/v1/completions`, { prompt: range(301, 341) });
    expect(other.body.choices[0].text).not.toBe(a.body.choices[0].text);

    const text: string = a.body.choices[0].text;
    const words = text.trim().split(' ');
    const stopWord = ` ${words[3]}`;
    const cut = text.indexOf(stopWord);
    const stopped = await postJson(`${mixed.url}/v1/completions`, { prompt, stop: [' zzz', stopWord] });
    expect(stopped.body.choices[0].finish_reason).toBe('stop');
    expect(stopped.body.choices[0].text).toBe(text.slice(0, cut));
    expect(stopped.body.usage.completion_tokens).toBeLessThan(16);
    const single = await postJson(`${mixed.url}/v1/completions`, { prompt, stop: stopWord });
    expect(single.body.choices[0].text).toBe(text.slice(0, cut));
  });

  it('finishes the context phase with stop when the first token already hits a stop string', async () => {
    const prompt = range(700, 720);
    const plain = await postJson(`${mixed.url}/v1/completions`, { prompt, max_tokens: 1 });
    expect(plain.body.choices[0].finish_reason).toBe('length');
    const first: string = plain.body.choices[0].text;
    const ctx = await postJson(`${ctxUrl}/v1/completions`, {
      prompt,
      stop: first,
      disaggregated_params: { request_type: 'context_only' },
    });
    expect(ctx.body.choices[0].finish_reason).toBe('stop');
    expect(ctx.body.choices[0].text).toBe('');
    const ctxOne = await postJson(`${ctxUrl}/v1/completions`, {
      prompt,
      max_tokens: 1,
      disaggregated_params: { request_type: 'context_only' },
    });
    expect(ctxOne.body.choices[0].finish_reason).toBe('length');
    expect(ctxOne.body.choices[0].text).toBe(first);
  });

  it('tokenizes text prompts with the Qwen3 tokenizer and answers one choice per prompt', async () => {
    const tok = getTokenizer('qwen3');
    const res = await postJson(`${mixed.url}/v1/completions`, { prompt: ['Hello, world!', 'Second prompt here'], max_tokens: 2 });
    expect(res.body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    expect(res.body.usage.prompt_tokens).toBe(tok.encode('Hello, world!').length + tok.encode('Second prompt here').length);
    const ids = await postJson(`${mixed.url}/v1/completions`, { prompt: tok.encode('Hello, world!'), max_tokens: 2 });
    expect(ids.body.choices[0].text).toBe(res.body.choices[0].text);
  });

  it('renders chat messages through the chat template', async () => {
    const tok = getTokenizer('qwen3');
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hi' },
    ];
    const ctx = await postJson(`${ctxUrl}/v1/chat/completions`, {
      messages,
      disaggregated_params: { request_type: 'context_only' },
    });
    expect(ctx.status).toBe(200);
    expect(ctx.body.object).toBe('chat.completion');
    const ids: number[] = ctx.body.prompt_token_ids;
    const imStart = tok.encode('<|im_start|>');
    expect(imStart).toEqual([151644]);
    expect(ids[0]).toBe(151644);
    expect(ids.filter((t) => t === 151644)).toHaveLength(3); // system, user, assistant prompt
    expect(ids).not.toEqual(tok.encode('You are terse.Say hi'));
    expect(tok.decode(ids)).toBe('<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\n');
    expect(ctx.body.choices[0].message.role).toBe('assistant');

    const gen = await postJson(`${genUrl}/v1/chat/completions`, {
      messages,
      prompt_token_ids: ids,
      max_tokens: 5,
      disaggregated_params: { ...ctx.body.choices[0].disaggregated_params, request_type: 'generation_only' },
    });
    const plain = await postJson(`${mixed.url}/v1/chat/completions`, { messages, max_tokens: 5 });
    expect(gen.body.choices[0].message.content).toBe(plain.body.choices[0].message.content);
    expect(plain.body.usage.prompt_tokens).toBe(ids.length);
  });

  it('streams completions as SSE text chunks with a final usage chunk and [DONE]', async () => {
    const prompt = range(10, 60);
    const plain = await postJson(`${mixed.url}/v1/completions`, { prompt, max_tokens: 6 });
    const sse = await postSse(`${mixed.url}/v1/completions`, {
      prompt,
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(sse.status).toBe(200);
    expect(sse.contentType).toContain('text/event-stream');
    expect(sse.events.at(-1)).toBe('[DONE]');
    const chunks = sse.events.slice(0, -1).map((e) => JSON.parse(e));
    for (const c of chunks) expect(c.object).toBe('text_completion');
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ prompt_tokens: 50, completion_tokens: 6 });
    const textChunks = chunks.slice(0, -1);
    expect(textChunks).toHaveLength(6);
    expect(textChunks.map((c) => c.choices[0].text).join('')).toBe(plain.body.choices[0].text);
    expect(textChunks.at(-1).choices[0].finish_reason).toBe('length');
    expect(textChunks[0].choices[0].finish_reason).toBeNull();
  });

  it('streams a chat generation_only continuation with delta chunks (role first) and no usage unless asked', async () => {
    const messages = [{ role: 'user', content: 'Stream please' }];
    const ctx = await postJson(`${ctxUrl}/v1/chat/completions`, {
      messages,
      max_tokens: 4,
      disaggregated_params: { request_type: 'context_only', disagg_request_id: 77 },
    });
    const sse = await postSse(`${genUrl}/v1/chat/completions`, {
      messages,
      prompt_token_ids: ctx.body.prompt_token_ids,
      max_tokens: 4,
      stream: true,
      disaggregated_params: { ...ctx.body.choices[0].disaggregated_params, request_type: 'generation_only' },
    });
    expect(sse.events.at(-1)).toBe('[DONE]');
    const chunks = sse.events.slice(0, -1).map((e) => JSON.parse(e));
    for (const c of chunks) expect(c.object).toBe('chat.completion.chunk');
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
    const content = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
    expect(content.startsWith(ctx.body.choices[0].message.content)).toBe(true);
    const plain = await postJson(`${mixed.url}/v1/chat/completions`, { messages, max_tokens: 4 });
    expect(content).toBe(plain.body.choices[0].message.content);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('length');
  });

  it('stores the prompt blocks on the context worker and on the generation worker that received them', async () => {
    const prompt = range(5000, 5070);
    const chain = blockHashChain(prompt, 32);
    const ctx = await postJson(`${ctxUrl}/v1/completions`, { prompt, disaggregated_params: { request_type: 'context_only' } });
    for (const h of chain) expect(cluster.contextWorkers[0].kv.has(h)).toBe(true);
    const gen = cluster.generationWorkers[1];
    await postJson(`${gen.url}/v1/completions`, {
      prompt,
      disaggregated_params: { ...ctx.body.choices[0].disaggregated_params, request_type: 'generation_only' },
    });
    for (const h of chain) expect(gen.kv.has(h)).toBe(true);
  });

  it('answers 400 to malformed requests', async () => {
    const bad = await fetch(`${mixed.url}/v1/completions`, { method: 'POST', body: '{not json' });
    expect(bad.status).toBe(400);
    expect((await postJson(`${mixed.url}/v1/completions`, { prompt: [] })).status).toBe(400);
    expect((await postJson(`${mixed.url}/v1/completions`, { prompt: [1, 2], max_tokens: 0 })).status).toBe(400);
    expect((await postJson(`${mixed.url}/v1/chat/completions`, { messages: [] })).status).toBe(400);
    expect((await fetch(`${mixed.url}/nope`)).status).toBe(404);
  });

  it('decodes msgpack bodies flagged X-TRTLLM-Msgpack: 1 beside JSON ones; with msgpack off it answers them as an older worker', async () => {
    const flagged = { 'content-type': 'application/json', 'x-trtllm-msgpack': '1' };
    const request = { model: 'm', prompt: [1, 2, 3], max_tokens: 2 };
    const before = mixed.stats.requests.byEncoding;
    const res = await fetch(`${mixed.url}/v1/completions`, { method: 'POST', headers: flagged, body: pack(request) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(2);
    expect((await postJson(`${mixed.url}/v1/completions`, request)).status).toBe(200);
    expect(mixed.stats.requests.byEncoding).toEqual({ json: before.json + 1, msgpack: before.msgpack + 1 });
    const garbled = await fetch(`${mixed.url}/v1/completions`, { method: 'POST', headers: flagged, body: Buffer.from([0xc1, 0x00]) });
    expect(garbled.status).toBe(400);

    const old = await startSimWorker({ role: 'mixed', msgpack: false });
    try {
      const refused = await fetch(`${old.url}/v1/completions`, { method: 'POST', headers: flagged, body: pack(request) });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({ detail: 'There was an error parsing the body' });
      expect((await postJson(`${old.url}/v1/completions`, request)).status).toBe(200);
      expect(old.stats.requests).toMatchObject({ rejected: 1, byEncoding: { json: 1, msgpack: 0 } });
    } finally {
      await old.close();
    }
  });
});
