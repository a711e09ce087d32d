import { beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import { contextHandler, json, type FakeHandler, type FakeWorker, type ReceivedRequest } from '../support/fake-worker';
import { waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { readSse } from '../support/sse';
import { allIdle } from '../routing/support/sim-helpers';
import { toolCallingGeneration, type ScriptedCall } from './tool-worker';

/** A context worker that also counts tokens (a fixed answer per worker, to tell them apart). */
function countingContext(inputTokens: number, finished: () => boolean): FakeHandler {
  const chat = contextHandler();
  const whole = contextHandler({ finishReason: 'stop' });
  return (req, res, worker) => {
    if (finished() && req.path === '/v1/chat/completions') return whole(req, res, worker);
    if (req.path === '/v1/messages/count_tokens') {
      if (req.body?.model === 'refused') return json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'tool schema not understood' } });
      return json(res, 200, { input_tokens: inputTokens });
    }
    return chat(req, res, worker);
  };
}

const CREDENTIALS = ['x-api-key', 'anthropic-version', 'authorization', 'anthropic-beta'];

function expectNoCredentials(requests: ReceivedRequest[]): void {
  expect(requests.length).toBeGreaterThan(0);
  for (const r of requests) for (const h of CREDENTIALS) expect(r.headers[h]).toBeUndefined();
}

describe('the Messages API over scripted workers that record what they get', () => {
  let calls: ScriptedCall[] | undefined;
  /** The context phase finishes the answer (its single token was the last). */
  let contextFinishes = false;
  /** Chat SSE events the generation worker sends as they are, instead of its script. */
  let rawEvents: unknown[] | undefined;
  const generation = toolCallingGeneration(() => calls);
  const cluster = useRouterCluster({
    workers: {
      ctx1: countingContext(11, () => contextFinishes),
      ctx2: countingContext(22, () => contextFinishes),
      gen: (req, res, w) => {
        if (!rawEvents) return generation(req, res, w);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const e of rawEvents) res.write(`data: ${JSON.stringify(e)}\n\n`);
        res.end('data: [DONE]\n\n');
      },
    },
    config: (c) => ({ context_servers: { urls: [c.ctx1.url, c.ctx2.url] }, generation_servers: { urls: [c.gen.url] } }),
  });
  let client: Anthropic;
  const workers = (): FakeWorker[] => [cluster.ctx1, cluster.ctx2, cluster.gen];
  const chatBodies = (w: FakeWorker) => w.requests('/v1/chat/completions').map((r) => r.body ?? {});
  beforeAll(() => {
    client = new Anthropic({ baseURL: cluster.url, apiKey: 'sk-ant-secret', maxRetries: 0, defaultHeaders: { authorization: 'Bearer sk-other', 'anthropic-beta': 'tools-2024' } });
  });
  beforeEach(() => {
    calls = undefined;
    contextFinishes = false;
    rawEvents = undefined;
    for (const w of workers()) w.received.length = 0;
  });

  it('converts the request into the chat both phases get, and forwards no client credentials', async () => {
    // The sampling fields older clients (and Claude Code) still send; this SDK's types dropped them.
    const sampling = { temperature: 0.5, top_p: 0.9, top_k: 40 };
    const message = await client.messages.create({
      ...sampling,
      model: 'm',
      max_tokens: 2048,
      system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=1.0; cc_entrypoint=cli;' }, { type: 'text', text: 'You are terse.' }, { type: 'text', text: 'Answer in English.' }],
      messages: [
        { role: 'user', content: [
          { type: 'text', text: 'What is in these pictures?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'aGVsbG8=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
        ] },
      ],
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
      tool_choice: { type: 'auto' },
      stop_sequences: ['END'],
      metadata: { user_id: 'user-7' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    const ctx = [...chatBodies(cluster.ctx1), ...chatBodies(cluster.ctx2)];
    const gen = chatBodies(cluster.gen);
    expect(ctx).toHaveLength(1);
    expect(gen).toHaveLength(1);
    for (const body of [ctx[0], gen[0]]) {
      expect(body.messages).toEqual([
        { role: 'system', content: 'You are terse.\n\nAnswer in English.' },
        { role: 'user', content: [
          { type: 'text', text: 'What is in these pictures?' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,aGVsbG8=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
        ] },
      ]);
      expect(body).toMatchObject({
        model: 'm', max_tokens: 2048, stream: false, temperature: 0.5, top_p: 0.9, top_k: 40, stop: ['END'], user: 'user-7', tool_choice: 'auto',
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
        chat_template_kwargs: { enable_thinking: true }, thinking_token_budget: 1024,
      });
      for (const key of ['system', 'stop_sequences', 'metadata', 'thinking', 'tool_choice_type']) expect(body).not.toHaveProperty(key);
    }
    expect(ctx[0].disaggregated_params).toMatchObject({ request_type: 'context_only' });
    expect(gen[0].disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 777 });
    expectNoCredentials(workers().flatMap((w) => w.received));
    // The generation worker's chat answer, as a message; usage is the context worker's prompt usage.
    expect(message.content).toEqual([{ type: 'text', text: 'AAA' }]);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.stop_sequence).toBeNull();
    expect(message.usage).toMatchObject({ input_tokens: 3, cache_read_input_tokens: 2, cache_creation_input_tokens: 0, output_tokens: 3 });
  });

  it('makes a tool-use round trip: tool_use answer, then the tool_result turn', async () => {
    calls = [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }];
    const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
    const first = await client.messages.create({ model: 'm', max_tokens: 64, tools, messages: [question] });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(first.usage).toMatchObject({ input_tokens: 3, cache_read_input_tokens: 2, output_tokens: 12 });

    calls = undefined;
    for (const w of workers()) w.received.length = 0;
    const second = await client.messages.create({
      model: 'm', max_tokens: 64, tools,
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: '18°C, sunny' }] }, { type: 'text', text: 'Thanks!' }] }],
    });
    expect(second.content[0]).toEqual({ type: 'text', text: 'AAA' });
    const [gen] = chatBodies(cluster.gen);
    expect(gen.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '18°C, sunny' },
      { role: 'user', content: [{ type: 'text', text: 'Thanks!' }] },
    ]);
  });

  it('streams tool calls with the stream helper: one block at a time, arguments as input_json_delta', async () => {
    calls = [{ id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' }, { id: 'call_b', name: 'get_weather', arguments: '{"city":"Oslo"}' }];
    const stream = client.messages.stream({ model: 'm', max_tokens: 64, tools: [{ name: 'get_weather', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'Paris and Oslo?' }] });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_b', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
    expect(final.usage).toMatchObject({ input_tokens: 3, cache_read_input_tokens: 2, output_tokens: 12 });
    const [gen] = chatBodies(cluster.gen);
    expect(gen).toMatchObject({ stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
  });

  it('writes the Messages event sequence on the wire, ping after message_start', async () => {
    calls = [{ id: 'call_a', name: 'lookup', arguments: '{"q":"x"}' }];
    // Claude Code adds ?beta=true to its Messages calls.
    const res = await fetch(`${cluster.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm', max_tokens: 16, stream: true, tools: [{ name: 'lookup', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'q' }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = (await readSse(res)).map((d) => JSON.parse(d) as Record<string, unknown>);
    expect(events.map((e) => e.type)).toEqual([
      'message_start', 'ping',
      'content_block_start', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'message_delta', 'message_stop',
    ]);
    expect(events[2]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(events[5]).toEqual({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_a', name: 'lookup', input: {} } });
    expect((events[6].delta as Record<string, unknown>).type).toBe('input_json_delta');
    expect(events[9]).toEqual({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 3, output_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 2 } });
    expect(events.some((e) => JSON.stringify(e).includes('[DONE]'))).toBe(false);
  });

  it('counts tokens on the context workers in turn, relaying their answers and errors', async () => {
    const counts = [await client.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), await client.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })];
    expect(counts.map((c) => c.input_tokens).sort()).toEqual([11, 22]);
    const forwarded = [...cluster.ctx1.requests('/v1/messages/count_tokens'), ...cluster.ctx2.requests('/v1/messages/count_tokens')];
    expect(forwarded).toHaveLength(2);
    expect(forwarded[0].body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(cluster.gen.requests('/v1/messages/count_tokens')).toHaveLength(0);
    expectNoCredentials(forwarded);
    const refused = await client.messages.countTokens({ model: 'refused', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'tool schema not understood' } });
  });

  it('streams reasoning as a thinking block and interleaved tool calls as one block each', async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
    rawEvents = [
      chunk({ role: 'assistant', reasoning_content: 'The user wants ' }),
      chunk({ reasoning_content: 'two lookups.' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '{"q":' } }] }),
      // The second call starts while the first one's block is open: buffered, never lost.
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '{"q":"b' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"a"}' } }, { index: 1, function: { arguments: '"}' } }] }),
      chunk({}, 'tool_calls'),
      { id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [], usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } },
    ];
    const res = await fetch(`${cluster.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 2048, stream: true, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [{ name: 'lookup', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'a and b' }] }),
    });
    const events = (await readSse(res)).map((d) => JSON.parse(d) as Record<string, unknown>);
    const starts = events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block);
    expect(starts).toEqual([
      { type: 'thinking', thinking: '', signature: '' },
      { type: 'tool_use', id: 'call_a', name: 'lookup', input: {} },
      { type: 'tool_use', id: 'call_b', name: 'lookup', input: {} },
    ]);
    const deltas = (index: number) => events.filter((e) => e.type === 'content_block_delta' && e.index === index).map((e) => e.delta as Record<string, string>);
    expect(deltas(0)).toEqual([{ type: 'thinking_delta', thinking: 'The user wants ' }, { type: 'thinking_delta', thinking: 'two lookups.' }]);
    expect(deltas(1).map((d) => d.partial_json).join('')).toBe('{"q":"a"}');
    expect(deltas(2).map((d) => d.partial_json).join('')).toBe('{"q":"b"}');
    // Every block closed before the next opened.
    const order = events.filter((e) => String(e.type).startsWith('content_block_s')).map((e) => `${String(e.type).slice(14)}${String(e.index)}`);
    expect(order).toEqual(['start0', 'stop0', 'start1', 'stop1', 'start2', 'stop2']);
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' } });
  });

  it('answers from the context phase when it already finished the answer, plain and streamed', async () => {
    contextFinishes = true;
    const plain = await client.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.content).toEqual([{ type: 'text', text: 'A' }]);
    expect(plain.stop_reason).toBe('end_turn');
    const streamed = await client.messages.stream({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(streamed.content).toEqual(plain.content);
    expect(streamed.stop_reason).toBe('end_turn');
    expect(streamed.usage).toMatchObject({ input_tokens: 3, cache_read_input_tokens: 2, output_tokens: 1 });
    expect(chatBodies(cluster.gen)).toHaveLength(0);
  });
});
