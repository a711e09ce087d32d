import type { ResponseMeta, Usage } from './openai-response';
import type { Generation } from './text-generator';

type Body = Record<string, unknown>;

/** TensorRT-LLM's mapping of a finish reason onto a response's status. */
function statusOf(finishReason: string): 'completed' | 'incomplete' {
  return finishReason === 'stop' ? 'completed' : 'incomplete';
}

function responsesUsage(usage: Usage): Body {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details.cached_tokens, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

function messageItem(meta: ResponseMeta, text: string): Body {
  return { id: `msg_${meta.id.slice(5)}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] };
}

/**
 * A Responses answer as TensorRT-LLM's worker writes it. A context_only answer that must go on
 * carries the handoff at the top level (`disaggregated_params`, `finish_reason`,
 * `prompt_token_ids`) and no output: its one token is not a message yet.
 */
export function responsesBody(meta: ResponseMeta, g: Generation, usage: Usage, handoff?: { disagg: Body | undefined; promptTokenIds: number[] }): Body {
  const status = statusOf(g.finishReason);
  const goesOn = handoff !== undefined && g.finishReason !== 'stop';
  const body: Body = {
    id: meta.id,
    object: 'response',
    created_at: meta.created,
    model: meta.model,
    status,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    output: goesOn ? [] : [messageItem(meta, g.text)],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    temperature: 1,
    top_p: 1,
    usage: responsesUsage(usage),
  };
  if (handoff) {
    body.finish_reason = g.finishReason;
    body.prompt_token_ids = handoff.promptTokenIds;
    if (handoff.disagg) body.disaggregated_params = handoff.disagg;
  }
  return body;
}

function event(type: string, seq: number, fields: Body): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq, ...fields })}\n\n`;
}

/**
 * The Responses event sequence of a streamed answer, grouped by decode step: step 0 opens the
 * response, its message and its text part; each step adds a token's text delta; the last one
 * closes them and ends with `response.completed` or `response.incomplete`.
 */
export function responsesStreamSteps(meta: ResponseMeta, g: Generation, usage: Usage): string[][] {
  const final = responsesBody(meta, g, usage);
  const opening = { ...final, status: 'in_progress', incomplete_details: null, output: [], usage: null };
  const item = messageItem(meta, g.text);
  const at = { item_id: item.id, output_index: 0, content_index: 0 };
  const emptyPart = { type: 'output_text', text: '', annotations: [], logprobs: [] };
  let seq = 0;
  const n = Math.max(1, g.tokenIds.length);
  const steps: string[][] = [];
  for (let s = 0; s < n; s++) steps.push([]);
  steps[0].push(
    event('response.created', seq++, { response: opening }),
    event('response.in_progress', seq++, { response: opening }),
    event('response.output_item.added', seq++, { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
    event('response.content_part.added', seq++, { ...at, part: emptyPart }),
  );
  g.pieces.forEach((piece, s) => {
    if (piece !== '') steps[s].push(event('response.output_text.delta', seq++, { ...at, delta: piece, logprobs: [] }));
  });
  const part = (item.content as Body[])[0];
  steps[n - 1].push(
    event('response.output_text.done', seq++, { ...at, text: g.text, logprobs: [] }),
    event('response.content_part.done', seq++, { ...at, part }),
    event('response.output_item.done', seq++, { output_index: 0, item }),
    event(final.status === 'completed' ? 'response.completed' : 'response.incomplete', seq++, { response: final }),
  );
  return steps;
}
