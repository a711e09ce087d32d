import type { RequestKind } from '../common';
import { replayResponseEvents } from './responses-events';
import { DoneWatch, ResponsesWatch, type StreamWatch } from './stream-watch';
import { contextUsageOf, responsesContextUsage, rewriteResponsesUsage, rewriteUsage, type ContextUsage } from './usage';

type Body = Record<string, unknown>;

/**
 * How one kind of request travels the two-phase flow: the parts of the worker protocol that
 * differ between `/v1/completions`, `/v1/chat/completions` and `/v1/responses` (see
 * docs/protocol.md "Context answer" and "Responses"). The flow itself is the same for all.
 */
export interface KindProtocol {
  /** Where token ids the router computed replace the prompt; undefined: the worker renders it. */
  readonly routerIdsKey: 'prompt' | 'prompt_token_ids' | undefined;
  /** Where the context answer's prompt ids go in the generation body. */
  readonly relayIdsKey: 'prompt' | 'prompt_token_ids';
  /** Whether the context answer's `prompt_token_ids_b64` is relayed too. */
  readonly relaysIdsB64: boolean;
  /** Members every body sent to a worker carries, whatever the client sent. */
  readonly workerFields: Readonly<Body> | undefined;
  /** Members of a finished context answer that only meant something to the router. */
  readonly handoffFields: readonly string[];
  /** The object of a context answer that carries `disaggregated_params` and `finish_reason`, or what is wrong. */
  handoffOf(answer: Body): Body | string;
  /** The context phase's prompt accounting, for the generation answer's usage. */
  contextUsage(answer: Body): ContextUsage | undefined;
  /** Puts the context's prompt accounting in a whole answer or a stream event; says whether it changed. */
  rewriteUsage(payload: Body, ctx: ContextUsage): boolean;
  /** A watch over one relayed generation stream: its end mark, and how a break ends it. */
  watchStream(): StreamWatch;
  /** What a streaming client gets when the context phase already finished the answer. */
  replayStream(answer: Body): string;
}

function choiceOf(answer: Body): Body | string {
  const choices = answer.choices;
  if (!Array.isArray(choices)) return 'a context answer without choices';
  if (choices.length !== 1) return `a context answer with ${choices.length} choices (expected 1)`;
  const choice = choices[0] as unknown;
  if (typeof choice !== 'object' || choice === null || Array.isArray(choice)) return 'a context answer whose choice is not an object';
  return choice as Body;
}

function rewriteTopUsage(payload: Body, ctx: ContextUsage): boolean {
  return payload.usage ? rewriteUsage(payload.usage, ctx) : false;
}

/** Completions and chat: the handoff on choices[0], streams closed by `[DONE]`. */
function completionsLike(routerIdsKey: 'prompt' | 'prompt_token_ids', toChunk: (answer: Body) => Body): KindProtocol {
  return {
    routerIdsKey,
    relayIdsKey: routerIdsKey,
    relaysIdsB64: false,
    workerFields: undefined,
    handoffFields: [],
    handoffOf: choiceOf,
    contextUsage: contextUsageOf,
    rewriteUsage: rewriteTopUsage,
    watchStream: () => new DoneWatch(),
    replayStream: (answer) => `data: ${JSON.stringify(toChunk(answer))}\n\ndata: [DONE]\n\n`,
  };
}

/** A complete chat answer as one stream chunk. */
function chatChunk(answer: Body): Body {
  const choices = (answer.choices as Body[]).map((c) => {
    const { message, ...rest } = c;
    return { ...rest, delta: message };
  });
  return { ...answer, object: 'chat.completion.chunk', choices };
}

/**
 * TensorRT-LLM's Responses path: no choices, so the handoff (`disaggregated_params`,
 * `finish_reason`, the prompt ids) stands at the answer's top level; workers keep no response
 * store behind a disaggregated server; a stream is the Responses event sequence, no `[DONE]`.
 */
const RESPONSES: KindProtocol = {
  routerIdsKey: undefined,
  relayIdsKey: 'prompt_token_ids',
  relaysIdsB64: true,
  workerFields: { store: false },
  handoffFields: ['disaggregated_params', 'finish_reason', 'prompt_token_ids', 'prompt_token_ids_b64'],
  handoffOf: (answer) => answer,
  contextUsage: responsesContextUsage,
  rewriteUsage: rewriteResponsesUsage,
  watchStream: () => new ResponsesWatch(),
  replayStream: replayResponseEvents,
};

const PROTOCOLS: Readonly<Record<RequestKind, KindProtocol>> = {
  completion: completionsLike('prompt', (answer) => answer),
  chat: completionsLike('prompt_token_ids', chatChunk),
  responses: RESPONSES,
};

export function protocolOf(kind: RequestKind): KindProtocol {
  return PROTOCOLS[kind];
}
