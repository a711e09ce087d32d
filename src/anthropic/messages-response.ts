import { randomUUID } from 'node:crypto';
import { isObject, type Json } from './json';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** A chat answer the conversion cannot turn into a message (tool arguments that are not an object). */
export class UnconvertibleAnswerError extends Error {}

export function messageId(): string {
  return `msg_${randomUUID().replace(/-/g, '')}`;
}

/**
 * Chat usage as Anthropic's: input_tokens counts the prompt tokens not read from the KV cache,
 * cache_read_input_tokens the ones that were (prompt_tokens_details.cached_tokens).
 */
export function usageOf(usage: unknown): AnthropicUsage {
  const u = isObject(usage) ? usage : {};
  const prompt = count(u.prompt_tokens);
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const cached = Math.min(count(details.cached_tokens), prompt);
  return { input_tokens: prompt - cached, output_tokens: count(u.completion_tokens), cache_creation_input_tokens: 0, cache_read_input_tokens: cached };
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

/**
 * finish_reason as stop_reason: stop -> end_turn (stop_sequence when the worker names the
 * matched string in `stop_reason`), length -> max_tokens, tool_calls -> tool_use.
 */
export function stopOf(finishReason: unknown, matched: unknown): { stop_reason: StopReason; stop_sequence: string | null } {
  if (finishReason === 'stop' && typeof matched === 'string') return { stop_reason: 'stop_sequence', stop_sequence: matched };
  if (finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finishReason === 'tool_calls') return { stop_reason: 'tool_use', stop_sequence: null };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/** A turn that called tools ends with tool_use (the client's tool loop keys off it) unless it was cut short. */
export function withToolUse(stop: { stop_reason: StopReason; stop_sequence: string | null }, calledTools: boolean): typeof stop {
  return calledTools && stop.stop_reason !== 'max_tokens' ? { stop_reason: 'tool_use', stop_sequence: null } : stop;
}

/** A tool call's arguments (JSON text) as the tool_use block's input object. */
export function toolInputOf(name: unknown, args: unknown): Json {
  if (isObject(args)) return args;
  try {
    const v: unknown = JSON.parse(typeof args === 'string' && args.trim() ? args : '{}');
    if (isObject(v)) return v;
  } catch {
    /* refused below */
  }
  throw new UnconvertibleAnswerError(`the arguments of tool call '${String(name)}' are not a JSON object`);
}

/** A whole chat completion as a Messages API message. */
export function chatToMessage(chat: Json, model: string): Json {
  const choice = Array.isArray(chat.choices) && isObject(chat.choices[0]) ? chat.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof message.content === 'string' && message.content) content.push({ type: 'text', text: message.content });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    if (!isObject(call)) continue;
    const fn = isObject(call.function) ? call.function : {};
    content.push({ type: 'tool_use', id: typeof call.id === 'string' && call.id ? call.id : `toolu_${randomUUID().replace(/-/g, '')}`, name: fn.name, input: toolInputOf(fn.name, fn.arguments) });
  }
  const stop = withToolUse(stopOf(choice.finish_reason, choice.stop_reason), content.some((c) => c.type === 'tool_use'));
  // A message carries at least one content block.
  if (content.length === 0) content.push({ type: 'text', text: '' });
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model: typeof chat.model === 'string' && chat.model ? chat.model : model,
    content,
    ...stop,
    usage: usageOf(chat.usage),
  };
}
