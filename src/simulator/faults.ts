import { z } from 'zod';
import { mulberry32 } from './seeded-random';

export const FAULT_KINDS = [
  'error', // answer with an HTTP error status (500 unless `status` says otherwise)
  'close', // destroy the socket without answering
  'hang', // never answer; the request stays open until the client leaves
  'slow', // answer normally after `delayMs` extra
  'invalid_json', // 200 with a JSON content type and a body that is not JSON
  'html', // 200 with an HTML page
  'no_disagg_params', // context answer without disaggregated_params (choices[0]'s, or the response's)
  'truncated_stream', // stream cut before [DONE] (non-streaming: body cut short)
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const SIM_ENDPOINTS = ['completions', 'chat', 'responses', 'health', 'server_info', 'models', 'kv_cache_events'] as const;
export type SimEndpoint = (typeof SIM_ENDPOINTS)[number];

export const REQUEST_TYPES = ['context_only', 'generation_only', 'plain'] as const;
export type RequestType = (typeof REQUEST_TYPES)[number];

export const faultRuleSchema = z
  .object({
    kind: z.enum(FAULT_KINDS),
    /** Fire on the next N matching requests, then the rule is spent. */
    count: z.number().int().positive().optional(),
    /** Fire on this share of matching requests, drawn from a PRNG seeded by `seed`. */
    fraction: z.number().min(0).max(1).optional(),
    seed: z.number().int().optional(),
    /** Endpoints the rule applies to; default the generation endpoints (completions, chat, responses). */
    endpoints: z.array(z.enum(SIM_ENDPOINTS)).nonempty().optional(),
    /** Request types the rule applies to (generation endpoints only); default all. */
    requestTypes: z.array(z.enum(REQUEST_TYPES)).nonempty().optional(),
    /** HTTP status for `error`. */
    status: z.number().int().min(400).max(599).optional(),
    /** Extra delay for `slow`, default 1000 ms. */
    delayMs: z.number().min(0).optional(),
  })
  .strict();

export type FaultRule = z.infer<typeof faultRuleSchema>;

const DEFAULT_ENDPOINTS: readonly SimEndpoint[] = ['completions', 'chat', 'responses'];

interface ActiveRule {
  rule: FaultRule;
  remaining: number; // Infinity when no count
  rand?: () => number;
}


/** The active fault rules of one worker; the first rule that fires on a request wins. */
export class FaultInjector {
  private rules: ActiveRule[] = [];
  readonly injected: Record<FaultKind, number> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<
    FaultKind,
    number
  >;

  get empty(): boolean {
    return this.rules.length === 0;
  }

  set(rules: readonly FaultRule[]): void {
    this.rules = [];
    this.add(rules);
  }

  add(rules: readonly FaultRule[]): void {
    for (const raw of rules) {
      const rule = faultRuleSchema.parse(raw);
      this.rules.push({
        rule,
        remaining: rule.count ?? Infinity,
        rand: rule.fraction !== undefined ? mulberry32(rule.seed ?? 1) : undefined,
      });
    }
  }

  clear(): void {
    this.rules = [];
  }

  /** The active rules, with the requests each has left (null = unlimited). */
  describe(): Array<FaultRule & { remaining: number | null }> {
    return this.rules.map((r) => ({ ...r.rule, remaining: Number.isFinite(r.remaining) ? r.remaining : null }));
  }

  /** The rule that fires for this request, if any (counts and PRNG draws are consumed). */
  pick(endpoint: SimEndpoint, requestType?: RequestType): FaultRule | undefined {
    for (let i = 0; i < this.rules.length; i++) {
      const r = this.rules[i];
      if (!(r.rule.endpoints ?? DEFAULT_ENDPOINTS).includes(endpoint)) continue;
      if (r.rule.requestTypes && (requestType === undefined || !r.rule.requestTypes.includes(requestType))) continue;
      if (r.rand && r.rand() >= r.rule.fraction!) continue;
      r.remaining--;
      if (r.remaining <= 0) this.rules.splice(i, 1);
      this.injected[r.rule.kind]++;
      return r.rule;
    }
    return undefined;
  }
}
