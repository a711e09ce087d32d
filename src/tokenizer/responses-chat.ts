type Body = Record<string, unknown>;

/**
 * Request members a chat keeps under the same name: what routing and tokenizing read besides
 * the messages (the model, conversation ids, the cache salt, template options).
 */
const SHARED_KEYS = ['model', 'prompt_cache_key', 'conversation_params', 'disaggregated_params', 'cache_salt', 'chat_template_kwargs', 'prompt_token_ids'];

/**
 * A Responses API request (`input` as a string or items, `instructions`, function `tools`,
 * `max_output_tokens`) as the chat completion request it amounts to: `instructions` become the
 * system message, message items their role's message, `function_call` items assistant tool
 * calls and `function_call_output` items tool messages. Input and output text parts become
 * text parts, images `image_url` parts; items with nothing a chat can hold (reasoning, hosted
 * tool calls) are left out.
 */
export function responsesAsChat(body: Readonly<Body>): Body {
  const messages: Body[] = [];
  if (typeof body.instructions === 'string' && body.instructions.length > 0) messages.push({ role: 'system', content: body.instructions });
  const input = body.input;
  if (typeof input === 'string') messages.push({ role: 'user', content: input });
  else if (Array.isArray(input)) for (const item of input) addItem(messages, item);
  const chat: Body = { messages };
  for (const key of SHARED_KEYS) if (body[key] !== undefined) chat[key] = body[key];
  if (typeof body.max_output_tokens === 'number') chat.max_tokens = body.max_output_tokens;
  const tools = Array.isArray(body.tools) ? body.tools.flatMap(chatTool) : [];
  if (tools.length > 0) chat.tools = tools;
  return chat;
}

function addItem(messages: Body[], raw: unknown): void {
  if (typeof raw !== 'object' || raw === null) return;
  const item = raw as Body;
  const type = item.type ?? 'message';
  if (type === 'message' && typeof item.role === 'string') {
    messages.push({ role: item.role === 'developer' ? 'system' : item.role, content: chatContent(item.content) });
  } else if (type === 'function_call') {
    const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
    const last = messages[messages.length - 1];
    // Parallel calls of one turn are one assistant message.
    if (last?.role === 'assistant' && Array.isArray(last.tool_calls) && last.content == null) (last.tool_calls as unknown[]).push(call);
    else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
  } else if (type === 'function_call_output') {
    messages.push({ role: 'tool', tool_call_id: item.call_id, content: chatContent(item.output) });
  }
}

function chatContent(content: unknown): unknown {
  if (typeof content === 'string' || !Array.isArray(content)) return typeof content === 'string' ? content : '';
  const parts: Body[] = [];
  for (const raw of content) {
    if (typeof raw !== 'object' || raw === null) continue;
    const part = raw as Body;
    if (typeof part.text === 'string' && (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text')) parts.push({ type: 'text', text: part.text });
    else if (typeof part.refusal === 'string') parts.push({ type: 'text', text: part.refusal });
    else if (part.type === 'input_image' && typeof part.image_url === 'string') parts.push({ type: 'image_url', image_url: { url: part.image_url } });
  }
  // Text alone is a string, as a chat client would send it (and renders plainly).
  return parts.every((p) => p.type === 'text') ? parts.map((p) => p.text).join('') : parts;
}

function chatTool(raw: unknown): Body[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const tool = raw as Body;
  if (tool.type !== 'function' || typeof tool.name !== 'string') return [];
  return [{ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }];
}
