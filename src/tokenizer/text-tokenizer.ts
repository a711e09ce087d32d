/** A chat message as OpenAI clients send it (text parts only are used for tokenization). */
export interface ChatMessage {
  role: string;
  content?: string | ChatContentPart[] | null;
  reasoning_content?: string | null;
  tool_calls?: ChatToolCall[] | null;
  name?: string;
}

export interface ChatContentPart {
  type: string;
  text?: string;
}

export interface ChatToolCall {
  id?: string;
  type?: string;
  function?: { name: string; arguments: string | Record<string, unknown> };
  name?: string;
  arguments?: string | Record<string, unknown>;
}

/** Text <-> token ids, shared by the simulated worker and the router's KV-cache-aware policy. */
export interface TextTokenizer {
  readonly name: string;
  /** Token ids of plain text (special-token markers such as `<|im_start|>` are recognised). */
  encode(text: string): number[];
  decode(ids: number[]): string;
  /** Token ids of a conversation rendered through the model's chat template, with the generation prompt. */
  encodeChat(messages: ChatMessage[]): number[];
  /** The conversation rendered as text (what encodeChat tokenizes). */
  renderChat(messages: ChatMessage[]): string;
}

/** The text of a message's content: a string, or the concatenated text parts. */
export function messageText(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  let out = '';
  for (const part of content) if (typeof part.text === 'string') out += part.text;
  return out;
}
