import { allTokenIds } from '../common/id-list-text';
import { messageText, type ChatMessage } from './text-tokenizer';
import type { PromptKind } from './prompt-request';

/** What a policy tokenizes: token ids already in the request, or text to encode. */
export type PromptSource =
  | { type: 'tokens'; tokenLists: number[][] }
  | { type: 'text'; texts: string[] }
  | { type: 'chat'; messages: ChatMessage[] };

/**
 * Where a request's prompt is, as TensorRT-LLM's routers read it: chat `prompt_token_ids`
 * (used as is) or `messages`; completion `prompt` as token ids, a list of token-id lists, a
 * string or a list of strings.
 */
export function promptSourceOf(kind: PromptKind, body: Readonly<Record<string, unknown>>): PromptSource {
  if (kind === 'chat') {
    const ids = body.prompt_token_ids;
    if (isTokenIds(ids)) return { type: 'tokens', tokenLists: [ids] };
    const messages = Array.isArray(body.messages) ? (body.messages as ChatMessage[]) : [];
    return { type: 'chat', messages };
  }
  const prompt = body.prompt;
  if (typeof prompt === 'string') return { type: 'text', texts: [prompt] };
  if (Array.isArray(prompt)) {
    if (prompt.length === 0) return { type: 'tokens', tokenLists: [] };
    if (isTokenIds(prompt)) return { type: 'tokens', tokenLists: [prompt] };
    if (prompt.every(isTokenIds)) return { type: 'tokens', tokenLists: prompt as number[][] };
    if (prompt.every((p) => typeof p === 'string')) return { type: 'text', texts: prompt as string[] };
  }
  return { type: 'text', texts: [] };
}

/** Token ids given by the client itself, if any. */
export function tokenListsInBody(kind: PromptKind, body: Readonly<Record<string, unknown>>): number[][] | undefined {
  const source = promptSourceOf(kind, body);
  return source.type === 'tokens' ? source.tokenLists : undefined;
}

/**
 * A canonical text of the request content without tokenizing (ConversationRouter's
 * `_extract_text`): chat as `role:content` lines, completion prompts joined by newlines.
 */
export function requestText(kind: PromptKind, body: Readonly<Record<string, unknown>>): string {
  if (kind === 'chat') {
    const messages = Array.isArray(body.messages) ? (body.messages as ChatMessage[]) : [];
    return messages.map((m) => `${m?.role ?? ''}:${messageText(m?.content)}`).join('\n');
  }
  const prompt = body.prompt;
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt) && prompt.every((p) => typeof p === 'string')) return prompt.join('\n');
  return JSON.stringify(prompt ?? '');
}

/** Unicode code points of a text, a cheap stand-in for token ids. */
export function codePoints(text: string): number[] {
  const out: number[] = [];
  for (const ch of text) out.push(ch.codePointAt(0)!);
  return out;
}

/** Request keys that change how a chat template renders, beyond the messages' text. */
const TEMPLATE_KEYS = ['tools', 'functions', 'chat_template', 'chat_template_kwargs', 'documents', 'continue_final_message'];

/**
 * Whether the router's own rendering of a chat (text parts, generation prompt, no tools) is
 * the whole prompt, so its token ids may replace the messages for the worker. Tools, template
 * options, a turned-off generation prompt or non-text content (images...) would be lost.
 */
export function chatRendersPlainly(body: Readonly<Record<string, unknown>>): boolean {
  for (const key of TEMPLATE_KEYS) if (body[key] !== undefined && body[key] !== null) return false;
  if (body.add_generation_prompt === false) return false;
  const messages = Array.isArray(body.messages) ? (body.messages as ChatMessage[]) : [];
  for (const m of messages) {
    if (m?.tool_calls || m?.reasoning_content) return false;
    if (Array.isArray(m?.content) && m.content.some((part) => part?.type !== 'text')) return false;
  }
  return true;
}

export function isTokenIds(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && allTokenIds(v);
}
