/** The fields of the context phase's usage that the generation answer reports instead. */
export interface ContextUsage {
  prompt_tokens?: number;
  cached_tokens?: number;
}

/** Where a kind of answer keeps its token counts: chat and completions, or Responses. */
interface UsageNames {
  input: string;
  output: string;
  details: string;
}
const OPENAI_USAGE: UsageNames = { input: 'prompt_tokens', output: 'completion_tokens', details: 'prompt_tokens_details' };
const RESPONSES_USAGE: UsageNames = { input: 'input_tokens', output: 'output_tokens', details: 'input_tokens_details' };

export function contextUsageOf(ctxResponse: Record<string, unknown>): ContextUsage | undefined {
  return usageIn(ctxResponse, OPENAI_USAGE);
}

/** A Responses answer's usage (`input_tokens`, `input_tokens_details.cached_tokens`) as context usage. */
export function responsesContextUsage(answer: Record<string, unknown>): ContextUsage | undefined {
  return usageIn(answer, RESPONSES_USAGE);
}

function usageIn(answer: Record<string, unknown>, names: UsageNames): ContextUsage | undefined {
  const usage = answer.usage as Record<string, unknown> | undefined | null;
  if (!usage || typeof usage !== 'object') return undefined;
  const details = usage[names.details] as Record<string, unknown> | undefined | null;
  const input = usage[names.input];
  return {
    prompt_tokens: typeof input === 'number' ? input : undefined,
    cached_tokens: details && typeof details.cached_tokens === 'number' ? details.cached_tokens : undefined,
  };
}

/**
 * The generation worker only saw a generation_only request; prompt accounting (and what
 * was served from cache) is the context worker's. total_tokens is kept consistent. Says
 * whether anything changed, so an answer that was right already is passed on as it came.
 */
export function rewriteUsage(usage: unknown, ctx: ContextUsage): boolean {
  return rewriteUsageAs(usage, ctx, OPENAI_USAGE);
}

/**
 * rewriteUsage for a Responses answer, or a stream event that carries one (`response.completed`
 * and the like hold it under `response`).
 */
export function rewriteResponsesUsage(payload: Record<string, unknown>, ctx: ContextUsage): boolean {
  const inner = payload.response;
  const usage = payload.usage ?? (inner && typeof inner === 'object' ? (inner as Record<string, unknown>).usage : undefined);
  return rewriteUsageAs(usage, ctx, RESPONSES_USAGE);
}

function rewriteUsageAs(usage: unknown, ctx: ContextUsage, names: UsageNames): boolean {
  if (!usage || typeof usage !== 'object') return false;
  const u = usage as Record<string, unknown>;
  let changed = false;
  if (ctx.prompt_tokens !== undefined) {
    changed = u[names.input] !== ctx.prompt_tokens;
    u[names.input] = ctx.prompt_tokens;
    const output = u[names.output];
    if (typeof output === 'number') {
      const total = ctx.prompt_tokens + output;
      changed ||= u.total_tokens !== total;
      u.total_tokens = total;
    }
  }
  if (ctx.cached_tokens !== undefined) {
    const details = (u[names.details] ?? {}) as Record<string, unknown>;
    changed ||= details.cached_tokens !== ctx.cached_tokens;
    details.cached_tokens = ctx.cached_tokens;
    u[names.details] = details;
  }
  return changed;
}
