import { GenerationEndpoint } from './openai-request';
import { FinishReason, Generation } from './text-generator';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
}

let responseCounter = 0;

export function newResponseMeta(endpoint: GenerationEndpoint, model: string): ResponseMeta {
  const n = (++responseCounter).toString(36);
  const prefix = endpoint === 'chat' ? 'chatcmpl-sim' : endpoint === 'responses' ? 'resp_sim' : 'cmpl-sim';
  return { id: `${prefix}${n}`, created: Math.floor(Date.now() / 1000), model };
}

export function usageOf(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/** The non-streaming body; `disagg` goes into choices[0], `promptTokenIds` to the top level. */
export function completionBody(
  endpoint: GenerationEndpoint,
  meta: ResponseMeta,
  gens: readonly Generation[],
  usage: Usage,
  disagg?: Record<string, unknown>,
  promptTokenIds?: number[],
): Record<string, unknown> {
  const choices = gens.map((g, index) => {
    const choice: Record<string, unknown> =
      endpoint === 'chat'
        ? { index, message: { role: 'assistant', content: g.text, reasoning_content: null, tool_calls: [] } }
        : { index, text: g.text };
    choice.logprobs = null;
    choice.finish_reason = g.finishReason;
    choice.stop_reason = null;
    if (disagg && index === 0) choice.disaggregated_params = disagg;
    return choice;
  });
  const body: Record<string, unknown> = {
    id: meta.id,
    object: endpoint === 'chat' ? 'chat.completion' : 'text_completion',
    created: meta.created,
    model: meta.model,
    choices,
    usage,
  };
  if (promptTokenIds) body.prompt_token_ids = promptTokenIds;
  return body;
}

/**
 * SSE events of a streamed answer grouped by decode step: step s holds token s of every
 * choice (step 0 also the assistant role chunk for chat); the last step ends with the usage
 * chunk (when asked for) and `[DONE]`.
 */
export function streamSteps(
  endpoint: GenerationEndpoint,
  meta: ResponseMeta,
  gens: readonly Generation[],
  usage: Usage | undefined,
): string[][] {
  const chat = endpoint === 'chat';
  const head = `{"id":${JSON.stringify(meta.id)},"object":"${chat ? 'chat.completion.chunk' : 'text_completion'}","created":${meta.created},"model":${JSON.stringify(meta.model)},"choices":[`;
  const steps: string[][] = [];
  const nSteps = Math.max(1, ...gens.map((g) => g.tokenIds.length));
  for (let s = 0; s < nSteps; s++) steps.push([]);
  if (chat) {
    gens.forEach((_g, index) => {
      steps[0].push(`data: ${head}{"index":${index},"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`);
    });
  }
  gens.forEach((g, index) => {
    const n = g.tokenIds.length;
    for (let s = 0; s < n; s++) {
      const last = s === n - 1;
      const piece = g.pieces[s];
      if (!last && piece === '') continue;
      const finish: FinishReason | null = last ? g.finishReason : null;
      const finishJson = finish ? `"${finish}"` : 'null';
      const content = JSON.stringify(piece);
      steps[s].push(
        chat
          ? `data: ${head}{"index":${index},"delta":{"content":${content}},"logprobs":null,"finish_reason":${finishJson}}]}\n\n`
          : `data: ${head}{"index":${index},"text":${content},"logprobs":null,"finish_reason":${finishJson},"stop_reason":null}]}\n\n`,
      );
    }
  });
  const tail = steps[nSteps - 1];
  if (usage) tail.push(`data: ${head}],"usage":${JSON.stringify(usage)}}\n\n`);
  tail.push('data: [DONE]\n\n');
  return steps;
}

/** TensorRT-LLM's error body (openai_protocol.ErrorResponse). */
export function errorBody(message: string, status: number, type = 'BadRequestError'): string {
  return JSON.stringify({ object: 'error', message, type, param: null, code: status });
}
