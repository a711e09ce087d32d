import { afterAll, describe, expect, it } from '@jest/globals';
import { acquireTokenizerThreads, getTokenizer, PromptTokenizer, releaseTokenizerThreads } from '../../src/tokenizer';
import { request } from '../routing/support/policy-harness';

describe('tokenization on worker threads', () => {
  const prompt = 'Disaggregated serving splits prefill and decode. '.repeat(50) + 'Ünïcødé and emoji 🚀 too.';
  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'What is a KV cache block?' },
  ];
  const tokenizer = new PromptTokenizer({ tokenizer: 'qwen3', tokenizer_threads: 1 });
  afterAll(async () => {
    await tokenizer.close();
  });

  it('gives exactly the ids of the qwen3 tokenizer, for text and chat', async () => {
    const qwen = getTokenizer('qwen3');
    const text = request({ prompt });
    const tokens = await tokenizer.tokenize(text);
    expect(tokens.lists).toEqual([qwen.encode(prompt)]);
    expect(tokens.tokenIds).toEqual(qwen.encode(prompt));
    const chat = request({ messages }, 'chat');
    expect((await tokenizer.tokenize(chat)).lists).toEqual([qwen.encodeChat(messages)]);
  }, 60_000);

  it('serves concurrent requests and uses token ids given in the request as they are', async () => {
    const texts = Array.from({ length: 6 }, (_, i) => `request ${i}: ${prompt.slice(i * 10)}`);
    const results = await Promise.all(texts.map((t) => tokenizer.tokenize(request({ prompt: t }))));
    const qwen = getTokenizer('qwen3');
    results.forEach((r, i) => expect(r.lists).toEqual([qwen.encode(texts[i])]));
    expect(await tokenizer.tokenize(request({ prompt: [5, 6, 7] }))).toEqual({ lists: [[5, 6, 7]] });
  }, 60_000);

  it('shares one pool per tokenizer and stops it with its last user', async () => {
    const a = acquireTokenizerThreads('qwen3', 1);
    const b = acquireTokenizerThreads('qwen3', 1);
    expect(a).toBe(b);
    await releaseTokenizerThreads('qwen3', a);
    await expect(b.encode('still up')).resolves.toEqual(getTokenizer('qwen3').encode('still up'));
    await releaseTokenizerThreads('qwen3', b);
    // `tokenizer` above still holds it: only now does the last release stop it.
    expect((await tokenizer.tokenize(request({ prompt: 'ok' }))).lists).toHaveLength(1);
    const own = acquireTokenizerThreads('qwen3-private', 1);
    await releaseTokenizerThreads('qwen3-private', own);
    await expect(own.encode('x')).rejects.toThrow('tokenizer threads are stopped');
  }, 60_000);
});
