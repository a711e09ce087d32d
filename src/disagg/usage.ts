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
