/** The fields of the context phase's usage that the generation answer reports instead. */
export interface ContextUsage {
  prompt_tokens?: number;
  cached_tokens?: number;
}

export function contextUsageOf(ctxResponse: Record<string, unknown>): ContextUsage | undefined {
  const usage = ctxResponse.usage as Record<string, unknown> | undefined | null;
  if (!usage || typeof usage !== 'object') return undefined;
  const details = usage.prompt_tokens_details as Record<string, unknown> | undefined | null;
  return {
    prompt_tokens: typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : undefined,
    cached_tokens: details && typeof details.cached_tokens === 'number' ? details.cached_tokens : undefined,
  };
}

/**
 * The generation worker only saw a generation_only request; prompt accounting (and what
 * was served from cache) is the context worker's. total_tokens is kept consistent. Says
 * whether anything changed, so an answer that was right already is passed on as it came.
 */
export function rewriteUsage(usage: unknown, ctx: ContextUsage): boolean {
  if (!usage || typeof usage !== 'object') return false;
  const u = usage as Record<string, unknown>;
  let changed = false;
  if (ctx.prompt_tokens !== undefined) {
    changed = u.prompt_tokens !== ctx.prompt_tokens;
    u.prompt_tokens = ctx.prompt_tokens;
    if (typeof u.completion_tokens === 'number') {
      const total = ctx.prompt_tokens + u.completion_tokens;
      changed ||= u.total_tokens !== total;
      u.total_tokens = total;
    }
  }
  if (ctx.cached_tokens !== undefined) {
    const details = (u.prompt_tokens_details ?? {}) as Record<string, unknown>;
    changed ||= details.cached_tokens !== ctx.cached_tokens;
    details.cached_tokens = ctx.cached_tokens;
    u.prompt_tokens_details = details;
  }
  return changed;
}

/** A Responses answer's usage (`input_tokens`, `input_tokens_details.cached_tokens`) as context usage. */
export function responsesContextUsage(answer: Record<string, unknown>): ContextUsage | undefined {
  const usage = answer.usage as Record<string, unknown> | undefined | null;
  if (!usage || typeof usage !== 'object') return undefined;
  const details = usage.input_tokens_details as Record<string, unknown> | undefined | null;
  return {
    prompt_tokens: typeof usage.input_tokens === 'number' ? usage.input_tokens : undefined,
    cached_tokens: details && typeof details.cached_tokens === 'number' ? details.cached_tokens : undefined,
  };
}

/**
 * rewriteUsage for a Responses answer, or a stream event that carries one (`response.completed`
 * and the like hold it under `response`): input accounting from the context phase,
 * total_tokens kept consistent.
 */
export function rewriteResponsesUsage(payload: Record<string, unknown>, ctx: ContextUsage): boolean {
  const inner = payload.response;
  const usage = (payload.usage ?? (inner && typeof inner === 'object' ? (inner as Record<string, unknown>).usage : undefined)) as unknown;
  if (!usage || typeof usage !== 'object') return false;
  const u = usage as Record<string, unknown>;
  let changed = false;
  if (ctx.prompt_tokens !== undefined) {
    changed = u.input_tokens !== ctx.prompt_tokens;
    u.input_tokens = ctx.prompt_tokens;
    if (typeof u.output_tokens === 'number') {
      const total = ctx.prompt_tokens + u.output_tokens;
      changed ||= u.total_tokens !== total;
      u.total_tokens = total;
    }
  }
  if (ctx.cached_tokens !== undefined) {
    const details = (u.input_tokens_details ?? {}) as Record<string, unknown>;
    changed ||= details.cached_tokens !== ctx.cached_tokens;
    details.cached_tokens = ctx.cached_tokens;
    u.input_tokens_details = details;
  }
  return changed;
}
