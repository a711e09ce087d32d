import { invalidRequest } from '../common';
import { chatMessagesOf, type ChatMessageOut } from './messages-content';
import { chatToolsOf } from './messages-tools';
import { isObject, type Json } from './json';

/** The chat request a Messages request becomes (docs/protocol.md "Anthropic Messages API"). */
export interface ChatConversion {
  body: Json;
  model: string;
  stream: boolean;
}

/** The smallest thinking budget the Messages API accepts. */
const MIN_THINKING_BUDGET = 1024;

/**
 * A `POST /v1/messages` body as the chat request the two-phase flow serves, as TensorRT-LLM's
 * disaggregated server converts it: the system prompt first, content blocks as chat parts,
 * tool_use / tool_result as tool_calls / tool messages, the sampling fields under their chat
 * names. Refuses (400) what would silently change the prompt if dropped.
 */
export function messagesToChat(raw: unknown): ChatConversion {
  const b = requestObject(raw);
  const model = modelOf(b);
  const maxTokens = b.max_tokens;
  if (maxTokens === undefined || maxTokens === null) throw invalidRequest('max_tokens: Field required', 'max_tokens', 'missing_required_parameter');
  if (!Number.isInteger(maxTokens) || (maxTokens as number) < 1) throw invalidRequest('max_tokens: must be a positive integer', 'max_tokens', 'invalid_type');
  const stream = optionalBoolean(b, 'stream') ?? false;
  const tools = chatToolsOf(b.tools, b.tool_choice);
  const chat: Json = { model, messages: promptOf(b), max_tokens: maxTokens, stream };
  if (tools.tools) chat.tools = tools.tools;
  if (tools.toolChoice) chat.tool_choice = tools.toolChoice;
  for (const key of ['temperature', 'top_p'] as const) {
    const v = optionalNumber(b, key);
    if (v !== undefined) chat[key] = v;
  }
  const topK = b.top_k;
  if (topK !== undefined && topK !== null) {
    if (!Number.isInteger(topK)) throw invalidRequest('top_k: must be an integer', 'top_k', 'invalid_type');
    chat.top_k = topK;
  }
  const stop = stopSequencesOf(b.stop_sequences);
  if (stop) chat.stop = stop;
  const user = metadataUser(b.metadata);
  if (user !== undefined) chat.user = user;
  applyThinking(chat, b.thinking, maxTokens as number);
  // Usage on every chunk: message_start can then tell the prompt's size at once.
  if (stream) chat.stream_options = { include_usage: true, continuous_usage_stats: true };
  return { body: chat, model, stream };
}

/**
 * The chat messages of a `POST /v1/messages/count_tokens` body (what its count covers: the
 * same prompt the Messages request would build, tools included).
 */
export function countTokensToChat(raw: unknown): { model: string; messages: ChatMessageOut[]; tools: Json[] | undefined } {
  const b = requestObject(raw);
  const model = modelOf(b);
  return { model, messages: promptOf(b), tools: chatToolsOf(b.tools, b.tool_choice).tools };
}

function requestObject(raw: unknown): Json {
  if (!isObject(raw)) throw invalidRequest('the request body must be a JSON object', null, 'invalid_body');
  return raw;
}

function modelOf(b: Json): string {
  if (b.model === undefined || b.model === null) throw invalidRequest('model: Field required', 'model', 'missing_required_parameter');
  if (typeof b.model !== 'string' || b.model.length === 0) throw invalidRequest('model: must be a non-empty string', 'model', 'invalid_type');
  return b.model;
}

function promptOf(b: Json): ChatMessageOut[] {
  const messages = chatMessagesOf(b.system, b.messages);
  if (messages.length === 0) throw invalidRequest('messages: at least one message is required', 'messages');
  return messages;
}

function optionalBoolean(b: Json, key: string): boolean | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalidRequest(`${key}: must be a boolean`, key, 'invalid_type');
  return v;
}

function optionalNumber(b: Json, key: string): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidRequest(`${key}: must be a number`, key, 'invalid_type');
  return v;
}

function stopSequencesOf(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) {
    throw invalidRequest('stop_sequences: must be an array of strings', 'stop_sequences', 'invalid_type');
  }
  return v.length > 0 ? (v as string[]) : undefined;
}

/** `metadata.user_id` is the chat request's `user`; the rest of metadata is for the client. */
function metadataUser(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw invalidRequest('metadata: must be an object', 'metadata', 'invalid_type');
  const id = v.user_id;
  if (id === undefined || id === null) return undefined;
  if (typeof id !== 'string') throw invalidRequest('metadata.user_id: must be a string', 'metadata.user_id', 'invalid_type');
  return id;
}

/**
 * Extended thinking reaches the worker's chat template (`enable_thinking`) and, with a budget,
 * its reasoning limit (`thinking_token_budget`); the keys derived here are listed in
 * `injected_chat_template_kwargs`, as TensorRT-LLM sends them.
 */
function applyThinking(chat: Json, v: unknown, maxTokens: number): void {
  if (v === undefined || v === null) return;
  if (!isObject(v) || typeof v.type !== 'string') throw invalidRequest('thinking: must be an object with a type', 'thinking', 'invalid_type');
  if (v.type !== 'enabled' && v.type !== 'disabled' && v.type !== 'adaptive') {
    throw invalidRequest(`thinking.type: '${v.type}' is not one of 'enabled', 'disabled', 'adaptive'`, 'thinking.type');
  }
  if (v.type === 'enabled') {
    const budget = v.budget_tokens;
    if (!Number.isInteger(budget) || (budget as number) < MIN_THINKING_BUDGET) {
      throw invalidRequest(`thinking.budget_tokens: must be an integer of at least ${MIN_THINKING_BUDGET}`, 'thinking.budget_tokens');
    }
    if ((budget as number) >= maxTokens) throw invalidRequest('thinking.budget_tokens: must be less than max_tokens', 'thinking.budget_tokens');
    chat.thinking_token_budget = budget;
  }
  chat.chat_template_kwargs = { enable_thinking: v.type !== 'disabled' };
  chat.injected_chat_template_kwargs = ['enable_thinking'];
}
