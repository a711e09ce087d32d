import type { ChatTemplateInput } from '../../../src/tokenizer/hf/chat-template';
import { int, pick, randomText, type Rng } from './prompt-generator';

/** Pieces the templates look for in content: think tags, tool response wrappers, newlines at the edges. */
const MARKERS = ['<think>', '</think>', '<tool_response>', '</tool_response>', '\n', '\n\n', '<|im_end|>', ''];
const ROLES = ['system', 'user', 'user', 'assistant', 'assistant', 'tool', 'developer'];

function content(rng: Rng): string {
  let out = '';
  for (let i = int(rng, 0, 4); i > 0; i--) out += rng() < 0.4 ? pick(rng, MARKERS) : randomText(rng, int(rng, 1, 12));
  return out;
}

function message(rng: Rng): Record<string, unknown> {
  const m: Record<string, unknown> = { role: pick(rng, ROLES), content: content(rng) };
  const r = rng();
  if (r < 0.1) m.reasoning_content = content(rng);
  else if (r < 0.13) m.reasoning_content = null;
  else if (r < 0.15) m.tool_calls = [{ type: 'function', function: { name: 'f', arguments: '{"a": 1}' } }];
  else if (r < 0.17) m.content = [{ type: 'text', text: content(rng) }];
  else if (r < 0.18) m.content = null;
  return m;
}

/** Mostly chats a native renderer covers; about one in five not. */
export function randomChat(rng: Rng): ChatTemplateInput {
  const messages = Array.from({ length: int(rng, 1, 9) }, () => message(rng));
  const input: ChatTemplateInput = { messages };
  const r = rng();
  if (r < 0.15) input.chat_template_kwargs = { enable_thinking: rng() < 0.5 };
  else if (r < 0.18) input.chat_template_kwargs = { enable_thinking: false, other: 1 };
  else if (r < 0.21) input.tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
  else if (r < 0.23) input.tools = [];
  if (rng() < 0.2) input.add_generation_prompt = rng() < 0.5;
  return input;
}
