import { createHmac } from 'node:crypto';
import type { ServerRole } from '../config';

/**
 * TensorRT-LLM's signatures on what the router forwards to workers (see docs/protocol.md
 * "Signed handoff"): HMAC-SHA256 with `internal_request_auth_key` over a canonical JSON text,
 * sent as `sha256=<hex>`.
 */
export const DISAGG_AUTH_HEADER = 'x-trtllm-disagg-auth';
export const SUBAGENT_AFFINITY_HEADER = 'x-trtllm-subagent-affinity-id';
export const SUBAGENT_AFFINITY_AUTH_HEADER = 'x-trtllm-subagent-affinity-auth';

type Params = Readonly<Record<string, unknown>>;

/** The fields a generation worker holding the key refuses to act on unsigned. */
const HANDOFF_FIELDS = ['encoded_opaque_state', 'ctx_info_endpoint'] as const;

/** Python escapes everything outside printable ASCII that JSON.stringify leaves as it is (DEL and up). */
const NON_ASCII = /[\u007f-\uffff]/g;

/**
 * The text Python's `json.dumps(v, sort_keys=True, separators=(",", ":"))` writes: keys
 * sorted, no spaces, every UTF-16 unit from DEL up escaped as `\uXXXX` (ensure_ascii).
 * Integers print alike in both languages; the signed values are strings and integers.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value).replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value as object).sort().map((k) => `${canonicalJson(k)}:${canonicalJson((value as Params)[k])}`);
  return `{${entries.join(',')}}`;
}

function sign(key: string, text: string): string {
  return `sha256=${createHmac('sha256', key).update(text, 'utf8').digest('hex')}`;
}

/** Whether a generation request's disaggregated_params carry a field that must be signed. */
export function needsHandoffAuth(params: Params | undefined): boolean {
  return params !== undefined && HANDOFF_FIELDS.some((f) => params[f] !== undefined && params[f] !== null);
}

/** A worker lists its endpoints; the signature covers the first, as a request names one. */
function firstEndpoint(endpoint: unknown): unknown {
  return Array.isArray(endpoint) ? (endpoint[0] ?? null) : endpoint;
}

/** `x-trtllm-disagg-auth` of a generation request carrying these disaggregated_params. */
export function handoffSignature(key: string, params: Params): string {
  return sign(key, canonicalJson({ ctx_info_endpoint: firstEndpoint(params.ctx_info_endpoint), encoded_opaque_state: params.encoded_opaque_state ?? null }));
}

export interface AffinityFields {
  role: ServerRole;
  model: unknown;
  /** conversation_params.conversation_id of the body sent, or undefined. */
  conversationId: unknown;
  affinityId: string;
  requestType: unknown;
  disaggRequestId: unknown;
}

/**
 * The affinity hint's signature binds it to its destination role and to the request it came
 * with (model, conversation, request type and id), so it cannot be replayed elsewhere.
 */
export function subagentAffinitySignature(key: string, f: AffinityFields): string {
  return sign(key, canonicalJson({
    purpose: SUBAGENT_AFFINITY_HEADER,
    role: f.role.toUpperCase(),
    model: f.model,
    conversation_id: f.conversationId,
    subagent_affinity_id: f.affinityId,
    request_type: f.requestType,
    disagg_request_id: f.disaggRequestId,
  }));
}
