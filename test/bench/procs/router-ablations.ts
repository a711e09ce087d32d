import { ApiKeyRateLimitGuard } from '../../../src/admission/api-key-rate-limit.guard';
import { KvEventPoller } from '../../../src/kv-cache/kv-event-poller';
import { StartupGuard } from '../../../src/health/startup.guard';
import { requestContextStorage } from '../../../src/observability/context/request-context';
import { MetricsService } from '../../../src/observability/metrics/metrics.service';
import { RequestContextHooks } from '../../../src/observability/context/request-context.hooks';
import { RequestEvents } from '../../../src/request-events';
import { idListJsonOf, rememberIdListJson } from '../../../src/common/id-list-text';
import { PromptTokenizer, type PromptTokens } from '../../../src/tokenizer/prompt-tokenizer';

/** Chat turns whose tokens the `tokenize` ablation keeps (then it starts over): bounded memory. */
const MEMO_TURNS = 4096;

/**
 * PromptTokenizer.tokenize answered from a memo keyed by the chat's message count and its last
 * message (unique per turn in the chat workload): the same ids array as the first time (its
 * remembered JSON with it), so hashing, tables and the worker bodies do their usual work and
 * only rendering and encoding drop out. Each turn is tokenized once, in the warm-up.
 */
function memoizedTokenize(freshIds = false): void {
  const tokenize = PromptTokenizer.prototype.tokenize;
  const memo = new Map<string, Promise<PromptTokens>>();
  PromptTokenizer.prototype.tokenize = function (this: PromptTokenizer, request) {
    const messages: unknown[] = Array.isArray(request.body.messages) ? request.body.messages : [];
    const last = messages[messages.length - 1] as { content?: unknown } | undefined;
    if (typeof last?.content !== 'string') return tokenize.call(this, request);
    const key = `${messages.length}\u0000${last.content}`;
    let found = memo.get(key);
    if (!found) {
      if (memo.size >= MEMO_TURNS) memo.clear();
      memo.set(key, (found = tokenize.call(this, request)));
    }
    return freshIds ? found.then(freshCopy) : found;
  };
}

/** The memoized tokens in a new ids array of this request's own (its JSON remembered with it), as the tokenizer returns them. */
function freshCopy(tokens: PromptTokens): PromptTokens {
  if (!tokens.tokenIds || tokens.lists.length !== 1) return tokens;
  const ids = tokens.tokenIds.slice();
  const json = idListJsonOf(tokens.tokenIds);
  if (json) rememberIdListJson(ids, json);
  return { ...tokens, lists: [ids], tokenIds: ids };
}

/**
 * Cost attribution only (`--ablate=...` of the router process in the ablation table): each
 * switch turns one per-request component into a no-op, so the difference in CPU per request
 * against the full router is that component's cost. Never used outside the bench.
 */
export const ABLATIONS: Record<string, () => void> = {
  /** The request-context Fastify hooks (onRequest, preHandler with ALS.run, onResponse metric). */
  hooks: () => {
    RequestContextHooks.prototype.onModuleInit = () => undefined;
  },
  /** RequestEvents (routed x2, requestDone per request) and whatever listens to them. */
  events: () => {
    RequestEvents.prototype.emit = () => false;
  },
  /** AsyncLocalStorage.run in the preHandler hook (enables promise hooks process-wide on Node 20). */
  als: () => {
    requestContextStorage.run = ((_store: unknown, cb: (...a: unknown[]) => unknown, ...a: unknown[]) => cb(...a)) as typeof requestContextStorage.run;
  },
  /** prom-client counters and histograms fed on every request. */
  metrics: () => {
    for (const m of ['httpResponse', 'requestDone', 'routed'] as const) MetricsService.prototype[m] = () => undefined;
  },
  /** kv_cache_aware's drain of a worker's KV events after each request (an HTTP call while one is not already running). */
  kvpoll: () => {
    KvEventPoller.prototype.poll = () => Promise.resolve();
  },
  /** Rendering and encoding of chats (memoizedTokenize): what tokenizing costs kv_cache_aware on the chat rows. */
  tokenize: () => memoizedTokenize(),
  /** As `tokenize`, each request getting its ids in a new list (as the tokenizer makes them): what a prompt's ids living as long as its request cost. */
  'tokenize-fresh-ids': () => memoizedTokenize(true),
  /** The global guards' own work (Nest's enhancer machinery stays). */
  enhancers: () => {
    StartupGuard.prototype.canActivate = () => true;
    ApiKeyRateLimitGuard.prototype.canActivate = () => true;
  },
};

export function applyAblations(list: string): void {
  for (const name of list.split(',').filter(Boolean)) {
    const apply = ABLATIONS[name];
    if (!apply) throw new Error(`unknown ablation '${name}'; known: ${Object.keys(ABLATIONS).join(', ')}`);
    apply();
  }
}
