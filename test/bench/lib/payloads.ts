/**
 * Request bodies and the canned upstream answers of the benchmark. Sizes follow
 * BASELINES.md: a ~1.1 KB completion request; the context answer carries the prompt's token
 * ids as a real worker's does; a streamed answer has ~20 chunks.
 */

export const STREAM_CHUNKS = 20;
const PROMPT_TOKENS = 256;

const promptText = 'The quick brown fox jumps over the lazy dog. '.repeat(22).trim();

export function completionBody(stream: boolean): string {
  return JSON.stringify({ model: 'bench-model', prompt: promptText, max_tokens: STREAM_CHUNKS, temperature: 0, stream });
}

/**
 * A text prompt of about `words` English words (8,951 Qwen3 tokens for the default), varied
 * so that the tokenizer's merges do real work, for KV-aware routing through a model tokenizer.
 */
export function longTextBody(words = 6000): string {
  const vocabulary = 'router worker cache prefill decode token block hash policy request answer stream server pool latency memory'.split(' ');
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(`${vocabulary[(i * 7) % vocabulary.length]}${i % 13 === 0 ? `-${i}` : ''}${i % 17 === 16 ? '.' : ''}`);
  return JSON.stringify({ model: 'bench-model', prompt: out.join(' '), max_tokens: STREAM_CHUNKS, temperature: 0, stream: false });
}

/** A 2k-token token-id prompt (for KV-cache-aware routing, which hashes token blocks). */
export function tokenIdBody(stream: boolean, tokens = 2048): string {
  const prompt = Array.from({ length: tokens }, (_, i) => 1000 + ((i * 7919) % 30000));
  return JSON.stringify({ model: 'bench-model', prompt, max_tokens: STREAM_CHUNKS, temperature: 0, stream });
}

const tokenIds = Array.from({ length: PROMPT_TOKENS }, (_, i) => 100 + i);

export const contextAnswer = JSON.stringify({
  id: 'cmpl-ctx',
  object: 'text_completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [
    {
      index: 0,
      text: 'A',
      finish_reason: 'length',
      disaggregated_params: {
        request_type: 'context_only',
        ctx_request_id: 777,
        first_gen_tokens: [42],
        encoded_opaque_state: 'b3BhcXVlLXN0YXRlLWZvci10aGUtYmVuY2g=',
        draft_tokens: null,
      },
    },
  ],
  prompt_token_ids: tokenIds,
  usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 1, total_tokens: PROMPT_TOKENS + 1, prompt_tokens_details: { cached_tokens: 0 } },
});

export const generationAnswer = JSON.stringify({
  id: 'cmpl-gen',
  object: 'text_completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [{ index: 0, text: ' lorem'.repeat(STREAM_CHUNKS), finish_reason: 'length' }],
  usage: { prompt_tokens: 1, completion_tokens: STREAM_CHUNKS, total_tokens: STREAM_CHUNKS + 1 },
});

/** One SSE event per token, then a usage event and [DONE]. */
export function streamEvents(): Buffer[] {
  const events: Buffer[] = [];
  for (let i = 0; i < STREAM_CHUNKS; i++) {
    const chunk = { id: 'cmpl-gen', object: 'text_completion', created: 1_700_000_000, model: 'bench-model', choices: [{ index: 0, text: ' lorem', finish_reason: i === STREAM_CHUNKS - 1 ? 'length' : null }] };
    events.push(Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`));
  }
  const usage = { id: 'cmpl-gen', object: 'text_completion', created: 1_700_000_000, model: 'bench-model', choices: [], usage: { prompt_tokens: 1, completion_tokens: STREAM_CHUNKS, total_tokens: STREAM_CHUNKS + 1 } };
  events.push(Buffer.from(`data: ${JSON.stringify(usage)}\n\n`));
  events.push(Buffer.from('data: [DONE]\n\n'));
  return events;
}

const question = [{ role: 'user', content: promptText }];

/** The same prompt as a chat request (the baseline of the Messages API rows). */
export function chatBody(stream: boolean): string {
  return JSON.stringify({ model: 'bench-model', messages: question, max_tokens: STREAM_CHUNKS, temperature: 0, stream, ...(stream ? { stream_options: { include_usage: true, continuous_usage_stats: true } } : {}) });
}

/** The same prompt as an Anthropic Messages API request (converted to the chat above). */
export function messagesBody(stream: boolean): string {
  return JSON.stringify({ model: 'bench-model', messages: question, max_tokens: STREAM_CHUNKS, temperature: 0, stream });
}

/** The canned answers above in chat shape, for requests to /v1/chat/completions. */
export const chatContextAnswer = JSON.stringify({
  ...(JSON.parse(contextAnswer) as Record<string, unknown>),
  object: 'chat.completion',
  choices: [{ ...(JSON.parse(contextAnswer) as { choices: Record<string, unknown>[] }).choices[0], text: undefined, message: { role: 'assistant', content: 'A' } }],
});

export const chatGenerationAnswer = JSON.stringify({
  ...(JSON.parse(generationAnswer) as Record<string, unknown>),
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: ' lorem'.repeat(STREAM_CHUNKS) }, finish_reason: 'length' }],
});

export function chatStreamEvents(): Buffer[] {
  const events: Buffer[] = [];
  for (let i = 0; i < STREAM_CHUNKS; i++) {
    const chunk = { id: 'chatcmpl-gen', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [{ index: 0, delta: { content: ' lorem' }, finish_reason: i === STREAM_CHUNKS - 1 ? 'length' : null }] };
    events.push(Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`));
  }
  const usage = { id: 'chatcmpl-gen', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [], usage: { prompt_tokens: 1, completion_tokens: STREAM_CHUNKS, total_tokens: STREAM_CHUNKS + 1 } };
  events.push(Buffer.from(`data: ${JSON.stringify(usage)}\n\n`));
  events.push(Buffer.from('data: [DONE]\n\n'));
  return events;
}
