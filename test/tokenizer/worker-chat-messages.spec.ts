import { afterAll, describe, expect, it } from '@jest/globals';
import { PromptTokenizer } from '../../src/tokenizer';
import { workerChatMessages } from '../../src/tokenizer/worker-chat-messages';
import { request } from '../routing/support/policy-harness';
import { fixtureDir } from './support/fixtures';

/** The messages a trtllm-serve worker hands its chat template (docs/protocol.md "Chat messages as the worker renders them"). */
describe('chat messages as the worker parses them', () => {
  it('turns null content into an empty text and text parts into one text, skipping empty ones', () => {
    expect(
      workerChatMessages([
        { role: 'system', content: null },
        { role: 'user', content: [{ type: 'text', text: 'a' }, 'b', { type: 'text', text: '' }, '', { type: 'text', text: null }, { type: 'text', text: 'c' }] },
        { role: 'user' },
        { role: 'user', content: 'as it is\n' },
      ]),
    ).toEqual([
      { role: 'system', content: '' },
      { role: 'user', content: 'a\nb\nc' },
      { role: 'user', content: '' },
      { role: 'user', content: 'as it is\n' },
    ]);
  });

  it("keeps an assistant's reasoning (the newer name first) and tool calls, their JSON arguments as objects", () => {
    const [m] = workerChatMessages([
      {
        role: 'assistant',
        content: null,
        name: 'dropped',
        reasoning: 'new name',
        reasoning_content: 'old name',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a": [1, "x"]}' } },
          { id: 'c2', type: 'function', function: { name: 'g', arguments: 'not json' } },
          { id: 'c3', type: 'function', function: { name: 'h', arguments: null } },
          { id: 'c4', type: 'function', function: { name: 'k', arguments: { b: 2 } } },
        ],
      },
    ])!;
    expect(m).toEqual({
      role: 'assistant',
      content: '',
      reasoning_content: 'new name',
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'f', arguments: { a: [1, 'x'] } } },
        { id: 'c2', type: 'function', function: { name: 'g', arguments: 'not json' } },
        { id: 'c3', type: 'function', function: { name: 'h', arguments: {} } },
        { id: 'c4', type: 'function', function: { name: 'k', arguments: { b: 2 } } },
      ],
    });
    expect(workerChatMessages([{ role: 'assistant', content: 'x', reasoning_content: 'r' }])).toEqual([{ role: 'assistant', content: 'x', reasoning_content: 'r' }]);
  });

  it("keeps a tool message's call id and nothing else of any message", () => {
    expect(workerChatMessages([{ role: 'tool', content: 'r', tool_call_id: 'c1', name: 'f' }, { role: 'user', content: 'q', name: 'n', tool_call_id: 'x' }])).toEqual([
      { role: 'tool', content: 'r', tool_call_id: 'c1' },
      { role: 'user', content: 'q' },
    ]);
  });

  it('leaves a chat with an image, audio or video part as it came', () => {
    expect(workerChatMessages([{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:,' } }] }])).toBeUndefined();
    expect(workerChatMessages([{ role: 'user', content: { text: 'not a list' } }])).toBeUndefined();
  });
});

describe('a chat with an assistant tool call through the model tokenizer', () => {
  const tokenizers: PromptTokenizer[] = [];
  afterAll(async () => {
    await Promise.all(tokenizers.map((t) => t.close()));
  });

  // Gemma 3's template refuses a tool message, on the worker as here.
  it.each(['qwen3', 'llama3', 'deepseek_v3'])('%s: is tokenized as the worker renders it, not routed by load only, its ids kept from older workers', async (model) => {
    const tokenizer = new PromptTokenizer({ tokenizer_dir: fixtureDir(model), tokenizer_threads: 0 });
    tokenizers.push(tokenizer);
    const messages = [
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', content: 'Sunny, 21 C', tool_call_id: 'c1' },
    ];
    const tokens = await tokenizer.tokenize(request({ model: 'm', messages }, 'chat'));
    expect(tokens.untokenized).toBeUndefined();
    const asParsed = await tokenizer.tokenize(request({ model: 'm', messages: workerChatMessages(messages) }, 'chat'));
    expect(tokens.lists).toEqual(asParsed.lists);
    expect(tokens.lists[0].length).toBeGreaterThan(10);
    // Routed by the newest worker's rendering, not forwarded: older workers keep arguments as text.
    expect(tokens.tokenIds).toBeUndefined();
    const plain = await tokenizer.tokenize(request({ model: 'm', messages: [{ role: 'system', content: null }, { role: 'user', content: 'Hi' }] }, 'chat'));
    expect(plain.tokenIds).toEqual(plain.lists[0]);
  });
});
