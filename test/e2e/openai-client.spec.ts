import { describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { useSimulatedOpenAi } from '../support/simulated-openai';

describe('the official openai client through the router, against simulated workers', () => {
  const sim = useSimulatedOpenAi();
  const cluster = sim.cluster;

  it('streams a chat completion with usage', async () => {
    const stream = await sim.client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'Tell me about disaggregated serving.' }],
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(8);
    expect(usage?.prompt_tokens).toBeGreaterThan(10);
    // Same prompt, same text: the simulated worker is deterministic, and so is the flow.
    const again = await sim.client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'Tell me about disaggregated serving.' }], max_tokens: 8 });
    expect(again.choices[0].message.content).toBe(text);
    expect(cluster.sim.contextWorkers[0].stats.requests.byType.context_only).toBe(2);
    expect(cluster.sim.generationWorkers[0].stats.requests.byType.generation_only).toBe(2);
  });

  it('serves a plain completion and lists models', async () => {
    const completion = await sim.client.completions.create({ model: 'sim-model', prompt: 'Hello', max_tokens: 4 });
    expect(completion.choices[0].text.length).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBe(4);
    const models = await sim.client.models.list();
    expect(models.data.map((m) => m.id)).toContain('sim-model');
  });

  it('surfaces router errors as API errors', async () => {
    await expect(sim.client.chat.completions.create({ model: 'sim-model', messages: [] })).rejects.toMatchObject({ status: 400 });
  });
});
