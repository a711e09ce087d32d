import { isRecord } from '../common/is-record';

/**
 * A chat's messages as a TensorRT-LLM worker hands them to its chat template (docs/protocol.md
 * "Chat messages as the worker renders them"): trtllm-serve parses each message before
 * templating, so the router renders what the worker renders, not the request as sent.
 * Following the newest trtllm-serve (serve/chat_utils.py, parse_chat_message_content):
 * - `content` null or absent becomes "", text parts are joined with "\n" (a part whose text is
 *   null is skipped), a plain string stays as it is;
 * - an assistant message keeps `reasoning_content` (or `reasoning`, the newer name, first) and
 *   `tool_calls`, each call's `function.arguments` given as JSON text turned into the object it
 *   holds (null: {}; text that does not parse stays text);
 * - a tool message keeps `tool_call_id`;
 * - nothing else of a message reaches the template.
 * Undefined when a message holds a part the router cannot render (an image, audio, video): such
 * chats keep their messages as they are and are routed by those ids, never forwarded.
 */
export function workerChatMessages(messages: readonly unknown[]): Record<string, unknown>[] | undefined {
  const out: Record<string, unknown>[] = [];
  for (const message of messages) {
    if (!isRecord(message)) return undefined;
    const content = textOf(message.content);
    if (content === undefined) return undefined;
    const parsed: Record<string, unknown> = { role: message.role, content };
    if (message.role === 'assistant') {
      const reasoning = message.reasoning ?? message.reasoning_content;
      if (reasoning != null) parsed.reasoning_content = reasoning;
      if (message.tool_calls != null) parsed.tool_calls = Array.isArray(message.tool_calls) ? message.tool_calls.map(withObjectArguments) : message.tool_calls;
    } else if (message.role === 'tool' && 'tool_call_id' in message) {
      parsed.tool_call_id = message.tool_call_id;
    }
    out.push(parsed);
  }
  return out;
}

/** The text the worker makes of a message's content; undefined for a part other than text. */
function textOf(content: unknown): string | undefined {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const part of content) {
    // Empty texts are skipped, as the worker skips them.
    if (typeof part === 'string') {
      if (part.length > 0) texts.push(part);
    } else if (isRecord(part) && part.type === 'text') {
      if (typeof part.text === 'string' && part.text.length > 0) texts.push(part.text);
      else if (part.text != null && typeof part.text !== 'string') return undefined;
    } else return undefined;
  }
  return texts.join('\n');
}

/** A tool call with its arguments as the object their JSON text holds. */
function withObjectArguments(call: unknown): unknown {
  if (!isRecord(call) || !isRecord(call.function)) return call;
  const args = call.function.arguments;
  let parsed: unknown = args;
  if (args == null) parsed = {};
  else if (typeof args === 'string') {
    try {
      parsed = JSON.parse(args) as unknown;
    } catch {
      parsed = args;
    }
  }
  return { ...call, function: { ...call.function, arguments: parsed } };
}
