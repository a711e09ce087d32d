import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { startSimCluster, type SimCluster, type SimWorker } from '../../src/simulator';
import { startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { allIdle, served, stateOf } from './support/sim-helpers';

const TPB = 16;
const POLICIES: [string, Record<string, unknown>][] = [
  ['round_robin', {}],
  ['load_balancing', { use_tokens: true, tokenizer: 'bytes' }],
  ['kv_cache_aware', { tokens_per_block: TPB, tokenizer: 'bytes' }],
  ['conversation', { tokens_per_block: TPB }],
];
const LONG = 'Disaggregated serving splits prefill and decode across two pools of workers. '.repeat(6);

describe.each(POLICIES)('%s routes Responses requests like the chats they are', (type, args) => {
  let sim: SimCluster;
  let router: RunningRouter;
  let client: OpenAI;

  beforeAll(async () => {
    sim = await startSimCluster({ context: 2, generation: 2, tokenizer: 'bytes', tokensPerBlock: TPB });
    const policy = { type, ...args };
    router = await startRouter({ context_servers: { urls: sim.contextUrls, router: policy }, generation_servers: { urls: sim.generationUrls, router: policy } });
    client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterEach(async () => {
    await waitFor(() => allIdle(router.app), 10_000, 'load back to zero');
  });
  afterAll(async () => {
    await router?.close();
    await sim?.close();
  });

  /** The context worker that served the request `run` makes. */
  async function contextOf(run: () => Promise<unknown>): Promise<SimWorker> {
    const before = sim.contextWorkers.map((w) => served(w).context_only);
    await run();
    const changed = sim.contextWorkers.filter((w, i) => served(w).context_only !== before[i]);
    expect(changed).toHaveLength(1);
    await waitFor(() => allIdle(router.app), 10_000, 'idle');
    return changed[0];
  }

  it('serves plain and streamed requests through both pools', async () => {
    for (let i = 0; i < 4; i++) {
      if (i % 2 === 0) {
        const r = await client.responses.create({ model: 'sim-model', input: `question ${i}`, max_output_tokens: 3 });
        expect(r.output_text.length).toBeGreaterThan(0);
      } else {
        const stream = await client.responses.create({ model: 'sim-model', input: `question ${i}`, max_output_tokens: 3, stream: true });
        let last = '';
        for await (const event of stream) last = event.type;
        expect(last).toBe('response.incomplete');
      }
    }
    const generationOnly = sim.generationWorkers.reduce((n, w) => n + served(w).generation_only, 0);
    expect(generationOnly).toBe(4);
  });

  if (type === 'round_robin') {
    it('takes turns over the context servers', async () => {
      const first = await contextOf(() => client.responses.create({ model: 'sim-model', input: 'a', max_output_tokens: 2 }));
      const second = await contextOf(() => client.responses.create({ model: 'sim-model', input: 'a', max_output_tokens: 2 }));
      expect(second).not.toBe(first);
    });
  }

  if (type === 'kv_cache_aware') {
    it('scores the input as its chat rendering: a repeated conversation goes where its prefix is cached', async () => {
      const input = [{ role: 'user' as const, content: LONG }];
      const first = await contextOf(() => client.responses.create({ model: 'sim-model', instructions: 'Be brief.', input, max_output_tokens: 2 }));
      await waitFor(() => stateOf(router.app, 'context', first.url).kvTable().size > 0, 10_000, 'the block table to fill');
      for (let turn = 0; turn < 2; turn++) {
        let cached = 0;
        const again = await contextOf(async () => {
          const r = await client.responses.create({ model: 'sim-model', instructions: 'Be brief.', input: [...input, { role: 'user', content: `and ${turn}?` }], max_output_tokens: 2 });
          cached = r.usage?.input_tokens_details.cached_tokens ?? 0;
        });
        expect(again).toBe(first);
        expect(cached).toBeGreaterThan(0);
      }
    });
  }

  if (type === 'conversation') {
    it('keeps a prompt_cache_key on one server whatever the input', async () => {
      const ask = (input: string) => () => client.responses.create({ model: 'sim-model', input, prompt_cache_key: 'codex-session-1', max_output_tokens: 2 });
      const first = await contextOf(ask('first turn'));
      for (const input of ['second turn', 'something else entirely']) expect(await contextOf(ask(input))).toBe(first);
    });

    it('keeps a session header on one server whatever the input', async () => {
      const ask = (input: string) => () => client.responses.create({ model: 'sim-model', input, max_output_tokens: 2 }, { headers: { 'x-session-id': 'session-7' } });
      const first = await contextOf(ask('hello'));
      for (const input of ['a different question', 'and another one']) expect(await contextOf(ask(input))).toBe(first);
    });
  }
});
