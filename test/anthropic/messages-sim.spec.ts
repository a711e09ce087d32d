import { beforeAll, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import { waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { allIdle } from '../routing/support/sim-helpers';

const question = [{ role: 'user' as const, content: 'Tell me about disaggregated serving.' }];

describe('the official Anthropic client through the router, against simulated workers', () => {
  const cluster = useRouterCluster({
    sim: { context: 2, generation: 1, tokenizer: 'bytes' },
    config: (c) => ({ context_servers: { urls: c.sim.contextUrls }, generation_servers: { urls: c.sim.generationUrls } }),
  });
  let client: Anthropic;
  beforeAll(() => {
    client = new Anthropic({ baseURL: cluster.router.url, apiKey: 'sk-ant-test', maxRetries: 0 });
  });

  it('answers messages.create through both phases, with usage', async () => {
    const before = cluster.sim.contextWorkers.map((w) => w.stats.requests.byType.context_only ?? 0);
    const message = await client.messages.create({ model: 'sim-model', max_tokens: 8, system: 'You are terse.', messages: question });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.id).toMatch(/^msg_/);
    expect(message.model).toBe('sim-model');
    expect(message.content).toHaveLength(1);
    expect(message.content[0].type).toBe('text');
    expect((message.content[0] as Anthropic.TextBlock).text.length).toBeGreaterThan(0);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(8);
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(10);
    const after = cluster.sim.contextWorkers.map((w) => w.stats.requests.byType.context_only ?? 0);
    expect(after.reduce((a, b) => a + b) - before.reduce((a, b) => a + b)).toBe(1);
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
  });

  it('streams with the SDK stream helper: the same text and usage as the plain answer', async () => {
    const plain = await client.messages.create({ model: 'sim-model', max_tokens: 8, messages: question });
    const events: string[] = [];
    const stream = client.messages.stream({ model: 'sim-model', max_tokens: 8, messages: question });
    let streamedText = '';
    // (The SDK keeps ping events to itself: the raw event sequence is checked over scripted workers.)
    stream.on('streamEvent', (e) => events.push(e.type));
    stream.on('text', (delta) => (streamedText += delta));
    const final = await stream.finalMessage();
    expect(final.content).toEqual(plain.content);
    expect(streamedText).toBe((plain.content[0] as Anthropic.TextBlock).text);
    expect(final.stop_reason).toBe('max_tokens');
    expect(final.usage.output_tokens).toBe(8);
    expect(final.usage.input_tokens).toBe(plain.usage.input_tokens + (plain.usage.cache_read_input_tokens ?? 0) - (final.usage.cache_read_input_tokens ?? 0));
    expect(events[0]).toBe('message_start');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(events.filter((e) => e === 'content_block_start')).toHaveLength(1);
    expect(events.filter((e) => e === 'content_block_stop')).toHaveLength(1);
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
  });

  it('counts tokens on a context worker, round robin, without touching the load counters', async () => {
    const counted = () => cluster.sim.contextWorkers.map((w) => w.stats.requests.byEndpoint.count_tokens ?? 0);
    const before = counted();
    const first = await client.messages.countTokens({ model: 'sim-model', messages: question });
    const second = await client.messages.countTokens({ model: 'sim-model', system: 'You are terse.', messages: question });
    expect(first.input_tokens).toBeGreaterThan(10);
    expect(second.input_tokens).toBeGreaterThan(first.input_tokens);
    // One each: round robin over the two ready context servers.
    expect(counted().map((n, i) => n - before[i])).toEqual([1, 1]);
    expect(cluster.sim.generationWorkers[0].stats.requests.byEndpoint.count_tokens ?? 0).toBe(0);
    expect(allIdle(cluster.router.app)).toBe(true);
  });

  it('the count matches the prompt the Messages request builds', async () => {
    const count = await client.messages.countTokens({ model: 'sim-model', messages: question });
    const message = await client.messages.create({ model: 'sim-model', max_tokens: 2, messages: question });
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBe(count.input_tokens);
  });

  it('lists the models of a context worker', async () => {
    const listed = () => cluster.sim.contextWorkers.map((w) => w.stats.requests.byEndpoint.models ?? 0);
    const before = listed().reduce((a, b) => a + b);
    const genBefore = cluster.sim.generationWorkers[0].stats.requests.byEndpoint.models ?? 0;
    const res = await fetch(`${cluster.url}/v1/models`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { id: string }[] };
    expect(body.data.map((m) => m.id)).toContain('sim-model');
    expect(listed().reduce((a, b) => a + b) - before).toBe(1);
    expect(cluster.sim.generationWorkers[0].stats.requests.byEndpoint.models ?? 0).toBe(genBefore);
  });
});
