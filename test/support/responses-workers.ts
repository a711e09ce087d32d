import { json, type FakeHandler } from './fake-worker';

type Body = Record<string, unknown>;

export const CTX_PARAMS = { request_type: 'context_only', ctx_request_id: 777, first_gen_tokens: [42], encoded_opaque_state: 'b3BhcXVl', draft_tokens: null };

export function responseObject(fields: Body = {}): Body {
  return {
    id: 'resp_w',
    object: 'response',
    created_at: 1,
    model: 'm',
    status: 'completed',
    incomplete_details: null,
    output: [{ id: 'msg_w', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello there', annotations: [] }] }],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    temperature: 1,
    top_p: 1,
    usage: { input_tokens: 999, input_tokens_details: { cached_tokens: 999 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1002 },
    ...fields,
  };
}

/**
 * A Responses context worker as TensorRT-LLM's: the handoff at the answer's top level
 * (`disaggregated_params`, `finish_reason`, `prompt_token_ids` or `prompt_token_ids_b64`).
 */
export function responsesContext(opts: { finishReason?: string; status?: string; b64?: string; ids?: number[]; output?: unknown[] } = {}): FakeHandler {
  return (req, res) => {
    const dp = (req.body?.disaggregated_params ?? {}) as Body;
    const ids = opts.ids ?? [1, 2, 3, 4, 5];
    const finishReason = opts.finishReason ?? 'length';
    json(res, 200, responseObject({
      status: opts.status ?? (finishReason === 'stop' ? 'completed' : 'incomplete'),
      output: opts.output ?? (finishReason === 'stop' ? responseObject().output : []),
      finish_reason: finishReason,
      disaggregated_params: { ...CTX_PARAMS, disagg_request_id: dp.disagg_request_id },
      ...(opts.b64 !== undefined ? { prompt_token_ids_b64: opts.b64 } : { prompt_token_ids: ids }),
      usage: { input_tokens: ids.length, input_tokens_details: { cached_tokens: 2 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: ids.length + 1 },
    }));
  };
}

function sse(type: string, seq: number, fields: Body): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq, ...fields })}\n\n`;
}

/**
 * A Responses generation worker: the whole answer, or its event sequence (`hang` leaves the
 * stream open after its first delta, for a client to leave).
 */
export function responsesGeneration(opts: { hang?: boolean; noEnd?: boolean } = {}): FakeHandler {
  return (req, res) => {
    const final = responseObject();
    if (!req.body?.stream) return json(res, 200, final);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const opening = { ...final, status: 'in_progress', output: [], usage: null };
    const at = { item_id: 'msg_w', output_index: 0, content_index: 0 };
    res.write(sse('response.created', 0, { response: opening }) + sse('response.in_progress', 1, { response: opening }));
    res.write(sse('response.output_text.delta', 2, { ...at, delta: 'Hello' }));
    if (opts.hang) return;
    res.write(sse('response.output_text.delta', 3, { ...at, delta: ' there' }));
    if (opts.noEnd) return void res.end();
    res.end(sse('response.completed', 4, { response: final }));
  };
}
