import { createHash } from 'node:crypto';
import { renderQwen3Chat } from '../chatml-template';
import type { ChatMessage } from '../text-tokenizer';
import type { ChatTemplateInput } from './chat-template';

/**
 * Chat templates rendered in TypeScript rather than by the Jinja engine, for the chats whose
 * shape the TypeScript renderer covers (README "Native chat templates"). A template is known
 * by its exact text; any other text, and any chat outside the covered shape, goes to Jinja.
 * ChatTemplates checks a native renderer against Jinja on PROBE_CHATS before it first uses it,
 * and keeps Jinja for that template if any output differs.
 */
export interface NativeChatTemplate {
  readonly name: string;
  /** The text Jinja renders for this chat, or undefined for a chat this renderer does not cover. */
  render(input: ChatTemplateInput): string | undefined;
}

/** SHA-256 (hex) of the template text -> its renderer. */
const KNOWN = new Map<string, NativeChatTemplate>();

/**
 * Qwen3's template (Qwen3-0.6B to Qwen3-235B-A22B, tokenizer_config.json `chat_template`), for
 * chats without tools or tool calls: the template's Jinja walks the history three times and
 * copies every assistant message while splitting it at `</think>`; this is one pass.
 */
const QWEN3: NativeChatTemplate = {
  name: 'Qwen3',
  render(input) {
    if (!coveredQwen3Chat(input)) return undefined;
    const addGenerationPrompt = input.add_generation_prompt ?? true;
    const text = renderQwen3Chat(input.messages as ChatMessage[], addGenerationPrompt);
    return addGenerationPrompt && input.chat_template_kwargs?.enable_thinking === false ? `${text}<think>\n\n</think>\n\n` : text;
  },
};
KNOWN.set('87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5', QWEN3);

/** The renderer of this exact template text, if there is one. */
export function nativeChatTemplateFor(source: string): NativeChatTemplate | undefined {
  return KNOWN.get(createHash('sha256').update(source).digest('hex'));
}

/**
 * Messages with string content and no tool calls (reasoning_content a string or absent), no
 * tools or documents, no continue_final_message, and no template variable but enable_thinking.
 */
function coveredQwen3Chat(input: ChatTemplateInput): boolean {
  if (input.tools != null || input.documents != null || input.continue_final_message === true) return false;
  const kwargs = input.chat_template_kwargs;
  if (kwargs !== undefined && Object.keys(kwargs).some((k) => k !== 'enable_thinking')) return false;
  const messages = input.messages;
  if (messages.length === 0) return false;
  for (const m of messages) {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return false;
    const { role, content, tool_calls: calls, reasoning_content: reasoning } = m as Record<string, unknown>;
    if (typeof role !== 'string' || typeof content !== 'string' || calls != null) return false;
    if (reasoning != null && typeof reasoning !== 'string') return false;
  }
  return true;
}

/** Chats every native renderer is checked on against Jinja: each branch of the templates above. */
export const PROBE_CHATS: ChatTemplateInput[] = [
  { messages: [{ role: 'user', content: 'Hi' }] },
  { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: '<think>\nplan\n</think>\n\nHello' }, { role: 'user', content: 'More' }] },
  { messages: [{ role: 'user', content: 'Q' }, { role: 'assistant', content: 'A', reasoning_content: '\nwhy\n' }, { role: 'system', content: 'late' }, { role: 'user', content: '<tool_response>x</tool_response>' }, { role: 'assistant', content: '\n\nend' }] },
  { messages: [{ role: 'user', content: 'Q' }, { role: 'tool', content: 'r1' }, { role: 'tool', content: 'r2' }, { role: 'assistant', content: 'x</think>y' }], add_generation_prompt: false },
  { messages: [{ role: 'user', content: 'Q' }], chat_template_kwargs: { enable_thinking: false } },
  { messages: [{ role: 'user', content: 'Q' }, { role: 'other', content: 'ignored' }], chat_template_kwargs: { enable_thinking: true } },
];
