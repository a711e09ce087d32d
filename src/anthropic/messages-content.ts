import { invalidRequest } from '../common';
import { isObject, type Json } from './json';

/** A chat message as the conversion builds it (what the chat worker and the tokenizer read). */
export interface ChatMessageOut {
  role: string;
  content: string | Json[] | null;
  tool_calls?: Json[];
  tool_call_id?: string;
  reasoning?: string;
}

/**
 * Claude Code puts a per-request billing line first in the system prompt: client telemetry the
 * model needs no part of, which would change the prompt's prefix (and its KV cache) every turn.
 */
const BILLING_BLOCK = /^x-anthropic-billing-header:\s*(?:[A-Za-z_][\w.-]*=[^;]*;\s*)+$/;

/**
 * The system prompt and the turns as chat messages: one system message first (the `system`
 * field and any system turns before the first real one), text and image blocks as content
 * parts, tool_use blocks as the assistant's tool_calls, tool_result blocks as tool messages in
 * the place they hold, thinking blocks as the assistant's `reasoning`.
 */
export function chatMessagesOf(system: unknown, messages: unknown): ChatMessageOut[] {
  if (messages === undefined || messages === null) throw invalidRequest('messages: Field required', 'messages', 'missing_required_parameter');
  if (!Array.isArray(messages)) throw invalidRequest('messages: must be an array', 'messages', 'invalid_type');
  const systemParts = systemTexts(system);
  const out: ChatMessageOut[] = [];
  let leading = true;
  messages.forEach((m: unknown, i: number) => {
    const where = `messages.${i}`;
    if (!isObject(m)) throw invalidRequest(`${where}: must be an object`, where, 'invalid_type');
    const role = m.role;
    if (role !== 'user' && role !== 'assistant' && role !== 'system') {
      throw invalidRequest(`${where}.role: must be 'user' or 'assistant'`, `${where}.role`);
    }
    // Only system turns before the first real one join the opening prompt: later ones stay in
    // place, so the prompt's prefix (and the KV cache it matches) does not change under them.
    if (role === 'system' && leading) {
      systemParts.push(...blockTexts(m.content, `${where}.content`));
      return;
    }
    leading = false;
    if (typeof m.content === 'string') {
      out.push({ role, content: m.content });
      return;
    }
    if (!Array.isArray(m.content)) throw invalidRequest(`${where}.content: must be a string or an array of content blocks`, `${where}.content`, 'invalid_type');
    convertTurn(role, m.content, where, out);
  });
  if (systemParts.length > 0) out.unshift({ role: 'system', content: systemParts.join('\n\n') });
  return out;
}

function systemTexts(system: unknown): string[] {
  if (system === undefined || system === null) return [];
  if (typeof system === 'string') return system ? [system] : [];
  const texts = blockTexts(system, 'system');
  return Array.isArray(system) && texts.length > 0 && BILLING_BLOCK.test(texts[0]) && textOf(system[0]) === texts[0] ? texts.slice(1) : texts;
}

/** Text blocks (or a string) as their texts; any other block refused. */
function blockTexts(content: unknown, where: string): string[] {
  if (typeof content === 'string') return content ? [content] : [];
  if (!Array.isArray(content)) throw invalidRequest(`${where}: must be a string or an array of text blocks`, where, 'invalid_type');
  const out: string[] = [];
  content.forEach((block: unknown, i: number) => {
    const text = textOf(block);
    if (text === undefined) throw invalidRequest(`${where}.${i}: only text blocks are accepted here`, `${where}.${i}`);
    if (text) out.push(text);
  });
  return out;
}

function textOf(block: unknown): string | undefined {
  return isObject(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : undefined;
}

function convertTurn(role: 'user' | 'assistant' | 'system', blocks: unknown[], where: string, out: ChatMessageOut[]): void {
  const parts: Json[] = [];
  const toolCalls: Json[] = [];
  const reasoning: string[] = [];
  // Parts gathered so far go out before a tool message, keeping user(before) -> tool -> user(after).
  const flush = (): void => {
    if (parts.length === 0) return;
    const message: ChatMessageOut = { role, content: parts.splice(0) };
    if (role === 'assistant' && reasoning.length > 0) message.reasoning = reasoning.splice(0).join('');
    out.push(message);
  };
  blocks.forEach((block: unknown, i: number) => {
    const at = `${where}.content.${i}`;
    if (!isObject(block) || typeof block.type !== 'string') throw invalidRequest(`${at}: must be a content block with a type`, at, 'invalid_type');
    switch (block.type) {
      case 'text':
        if (typeof block.text !== 'string') throw invalidRequest(`${at}.text: must be a string`, `${at}.text`, 'invalid_type');
        parts.push({ type: 'text', text: block.text });
        return;
      case 'image':
        parts.push(imagePart(block.source, `${at}.source`));
        return;
      case 'tool_use':
        if (role !== 'assistant') throw invalidRequest(`${at}: tool_use blocks are only valid in assistant messages`, at);
        toolCalls.push(toolCallOf(block, at));
        return;
      case 'tool_result':
        flush();
        out.push(toolMessageOf(block, at));
        return;
      case 'thinking':
        if (role !== 'assistant') throw invalidRequest(`${at}: thinking blocks are only valid in assistant messages`, at);
        if (typeof block.thinking !== 'string') throw invalidRequest(`${at}.thinking: must be a string`, `${at}.thinking`, 'invalid_type');
        reasoning.push(block.thinking);
        return;
      default:
        // Refused rather than dropped: a dropped block changes what the model is asked.
        throw invalidRequest(`${at}: content block type '${block.type}' is not supported by this server`, at);
    }
  });
  if (toolCalls.length > 0) {
    if (parts.some((p) => p.type !== 'text')) throw invalidRequest(`${where}: an assistant message with tool_use may carry only text besides`, where);
    const message: ChatMessageOut = { role, content: parts.map((p) => p.text as string).join('') || null, tool_calls: toolCalls };
    if (reasoning.length > 0) message.reasoning = reasoning.join('');
    out.push(message);
    return;
  }
  flush();
  if (role === 'assistant' && reasoning.length > 0) out.push({ role, content: null, reasoning: reasoning.join('') });
}

function imagePart(source: unknown, at: string): Json {
  if (isObject(source)) {
    if (source.type === 'url' && typeof source.url === 'string' && source.url) return { type: 'image_url', image_url: { url: source.url } };
    if (source.type === 'base64' && typeof source.data === 'string' && source.data) {
      const mediaType = typeof source.media_type === 'string' && source.media_type ? source.media_type : 'image/png';
      return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${source.data}` } };
    }
  }
  throw invalidRequest(`${at}: an image needs a 'base64' source with data or a 'url' source with a url`, at);
}

function toolCallOf(block: Json, at: string): Json {
  if (typeof block.id !== 'string' || !block.id) throw invalidRequest(`${at}.id: must be a non-empty string`, `${at}.id`, 'invalid_type');
  if (typeof block.name !== 'string' || !block.name) throw invalidRequest(`${at}.name: must be a non-empty string`, `${at}.name`, 'invalid_type');
  if (!isObject(block.input)) throw invalidRequest(`${at}.input: must be an object`, `${at}.input`, 'invalid_type');
  return { id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } };
}

function toolMessageOf(block: Json, at: string): ChatMessageOut {
  if (typeof block.tool_use_id !== 'string' || !block.tool_use_id) {
    throw invalidRequest(`${at}.tool_use_id: must be a non-empty string`, `${at}.tool_use_id`, 'invalid_type');
  }
  const content = block.content;
  const text = content === undefined || content === null ? '' : blockTexts(content, `${at}.content`).join('\n');
  return { role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error === true ? `Tool execution failed: ${text}` : text };
}
