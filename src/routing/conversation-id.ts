import type { ServerRole } from '../config';
import type { RoutingRequest } from './router.interface';

/** Request headers that carry a multi-turn id, in the order they are looked at. */
export const CONVERSATION_ID_HEADERS = ['x-session-id', 'x-correlation-id', 'x-session-affinity', 'x-multi-turn-session-id'] as const;

export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The conversation a request belongs to, as TensorRT-LLM's conversation router finds it: the
 * body's `conversation_params.conversation_id` first (canonical), then
 * `disaggregated_params.conversation_id` (the older field), then the first non-empty header of
 * CONVERSATION_ID_HEADERS, then `prompt_cache_key` (sent by Codex and other OpenAI clients).
 * Values are trimmed; empty ones, and a numeric 0, are no id.
 */
export function conversationIdOf(body: Readonly<Record<string, unknown>>, headers?: RequestHeaders): string | undefined {
  return idIn(body.conversation_params) ?? idIn(body.disaggregated_params) ?? headerId(headers) ?? idValue(body.prompt_cache_key);
}

/**
 * The id a conversation router places a request by: a sub-agent's parent session id in the
 * pools its affinity covers (TensorRT-LLM's subagent routing), else the conversation id.
 */
export function routingIdOf(request: RoutingRequest, role: ServerRole): string | undefined {
  const affinity = request.subagentAffinity;
  return affinity?.roles.includes(role) ? affinity.id : conversationIdOf(request.body, request.headers);
}

function idIn(params: unknown): string | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  return idValue((params as Record<string, unknown>).conversation_id);
}

function headerId(headers: RequestHeaders | undefined): string | undefined {
  if (!headers) return undefined;
  for (const name of CONVERSATION_ID_HEADERS) {
    const raw = headers[name];
    const id = idValue(Array.isArray(raw) ? raw[0] : raw);
    if (id !== undefined) return id;
  }
  return undefined;
}

function idValue(v: unknown): string | undefined {
  if (typeof v === 'string') {
    const id = v.trim();
    return id.length > 0 ? id : undefined;
  }
  if (typeof v === 'number' && Number.isFinite(v) && v !== 0) return String(v);
  return undefined;
}
