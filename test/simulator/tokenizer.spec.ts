import { describe, expect, it } from '@jest/globals';
import { ByteTokenizer, getTokenizer, renderQwen3Chat } from '../../src/tokenizer';

describe('tokenizer module', () => {
  it('loads each tokenizer once and caches it by name', () => {
    expect(getTokenizer()).toBe(getTokenizer('qwen3'));
    expect(getTokenizer('bytes')).toBe(getTokenizer('bytes'));
    expect(getTokenizer().name).toBe('qwen3');
    expect(() => getTokenizer('nope')).toThrow(/unknown tokenizer/);
  });

  it('encodes and decodes with the real Qwen3 vocabulary', () => {
    const tok = getTokenizer('qwen3');
    expect(tok.encode('Hello, world!')).toEqual([9707, 11, 1879, 0]);
    expect(tok.decode([9707, 11, 1879, 0])).toBe('Hello, world!');
    expect(tok.encode('<|im_start|>user\nhi<|im_end|>')).toEqual([151644, 872, 198, 6023, 151645]);
  });

  it('renders chat with Qwen3 ChatML and the generation prompt', () => {
    const tok = getTokenizer('qwen3');
    const messages = [
      { role: 'system', content: 'S' },
      { role: 'user', content: [{ type: 'text', text: 'Q1' }] },
      { role: 'assistant', content: '<think>\nr\n</think>\n\nA1' },
      { role: 'user', content: 'Q2' },
    ];
    expect(tok.renderChat(messages)).toBe(
      '<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ1<|im_end|>\n' +
        '<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(tok.encodeChat(messages)).toEqual(tok.encode(tok.renderChat(messages)));
    expect(renderQwen3Chat([{ role: 'user', content: 'x' }], false)).toBe('<|im_start|>user\nx<|im_end|>\n');
  });

  it('keeps reasoning of an assistant turn after the last query and groups tool responses', () => {
    const text = renderQwen3Chat([
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: 'calling', tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }] },
      { role: 'tool', content: 'r1' },
      { role: 'tool', content: 'r2' },
      { role: 'assistant', content: '<think>why</think>done' },
    ]);
    expect(text).toContain('<tool_call>\n{"name": "f", "arguments": {"a":1}}\n</tool_call><|im_end|>');
    expect(text).toContain('<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n');
    expect(text).toContain('<|im_start|>assistant\n<think>\nwhy\n</think>\n\ndone<|im_end|>\n');
  });

  it('falls back to UTF-8 bytes as ids', () => {
    const tok = new ByteTokenizer();
    expect(tok.encode('hé')).toEqual([104, 195, 169]);
    expect(tok.decode([104, 195, 169])).toBe('hé');
    expect(tok.encodeChat([{ role: 'user', content: 'a' }])).toEqual(tok.encode('<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n'));
  });

  it('encodes an 8k-token prompt (figure printed for reference)', () => {
    const tok = getTokenizer('qwen3');
    let text = '';
    for (let i = 0; text.length < 40_000; i++) text += `Sentence ${i} talks about routing, caches and tokens. `;
    tok.encode(text.slice(0, 1000));
    const t0 = process.hrtime.bigint();
    const ids = tok.encode(text);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    console.log(`qwen3 encode of ${ids.length} tokens: ${ms.toFixed(1)} ms`);
    expect(ids.length).toBeGreaterThan(8000);
    expect(tok.decode(ids)).toBe(text);
  });
});
