import { createHash } from 'node:crypto';

/**
 * Request headers that carry a multi-turn id, in the order they are looked at (TensorRT-LLM's
 * order: Claude Code's headers first, then the generic ones).
 */
export const CONVERSATION_ID_HEADERS = [
  'x-claude-code-session-id', 'x-claude-session-id', 'x-session-id', 'x-correlation-id', 'x-session-affinity', 'x-multi-turn-session-id',
] as const;

/**
 * Longest id kept as it is. Workers accept ids of any length, so a longer one is not refused:
 * it stands for its SHA-256 digest (`sha256:<hex>`), which keeps its conversation together
 * while every table keyed by it stays small.
 */
export const MAX_CONVERSATION_ID_CHARS = 256;

export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The conversation a request belongs to, as TensorRT-LLM's conversation router finds it: the
 * body's `conversation_params.conversation_id` first (canonical), then
 * `disaggregated_params.conversation_id` (the older field), then the first non-empty header of
 * CONVERSATION_ID_HEADERS, then `prompt_cache_key` (sent by Codex and other OpenAI clients).
 * Values are trimmed; empty ones, and a numeric 0, are no id; long ones are digested (see
 * MAX_CONVERSATION_ID_CHARS).
 */
export function conversationIdOf(body: Readonly<Record<string, unknown>>, headers?: RequestHeaders): string | undefined {
  const id = idIn(body.conversation_params) ?? idIn(body.disaggregated_params) ?? headerId(headers) ?? idValue(body.prompt_cache_key);
  return id === undefined || id.length <= MAX_CONVERSATION_ID_CHARS ? id : `sha256:${createHash('sha256').update(id).digest('hex')}`;
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
