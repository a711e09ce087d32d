import { ChatMessage, messageText } from './text-tokenizer';

/**
 * Qwen3's chat template (tokenizer_config.json `chat_template`) re-implemented for messages
 * without `tools`. The Jinja engine bundled with @lenml/tokenizers cannot evaluate that
 * template (no `startswith`/`endswith`, no member access after a call), so the rendering is
 * done here; the output is the same text the template produces with add_generation_prompt.
 */
export function renderQwen3Chat(messages: ChatMessage[], addGenerationPrompt = true): string {
  const texts = messages.map((m) => messageText(m.content));
  let out = '';
  if (messages.length > 0 && messages[0].role === 'system') {
    out += `<|im_start|>system\n${texts[0]}<|im_end|>\n`;
  }
  // Index of the last real user query (tool responses wrapped as user turns do not count).
  let lastQuery = messages.length - 1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const t = texts[i];
    if (messages[i].role === 'user' && !(t.startsWith('<tool_response>') && t.endsWith('</tool_response>'))) {
      lastQuery = i;
      break;
    }
  }
  messages.forEach((m, i) => {
    const text = texts[i];
    const last = i === messages.length - 1;
    if (m.role === 'user' || (m.role === 'system' && i !== 0)) {
      out += `<|im_start|>${m.role}\n${text}<|im_end|>\n`;
    } else if (m.role === 'assistant') {
      let content = text;
      let reasoning = '';
      if (m.reasoning_content != null) {
        reasoning = m.reasoning_content;
      } else if (text.includes('</think>')) {
        const parts = text.split('</think>');
        content = lstripNl(parts[parts.length - 1]);
        const before = rstripNl(parts[0]).split('<think>');
        reasoning = lstripNl(before[before.length - 1]);
      }
      if (i > lastQuery && (last || reasoning)) {
        out += `<|im_start|>assistant\n<think>\n${stripNl(reasoning)}\n</think>\n\n${lstripNl(content)}`;
      } else {
        out += `<|im_start|>assistant\n${content}`;
      }
      (m.tool_calls ?? []).forEach((call, j) => {
        if ((j === 0 && content) || j > 0) out += '\n';
        const fn = call.function ?? { name: call.name ?? '', arguments: call.arguments ?? '' };
        const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments);
        out += `<tool_call>\n{"name": "${fn.name}", "arguments": ${args}}\n</tool_call>`;
      });
      out += '<|im_end|>\n';
    } else if (m.role === 'tool') {
      if (i === 0 || messages[i - 1].role !== 'tool') out += '<|im_start|>user';
      out += `\n<tool_response>\n${text}\n</tool_response>`;
      if (last || messages[i + 1].role !== 'tool') out += '<|im_end|>\n';
    }
  });
  if (addGenerationPrompt) out += '<|im_start|>assistant\n';
  return out;
}

const lstripNl = (s: string): string => s.replace(/^\n+/, '');
const rstripNl = (s: string): string => s.replace(/\n+$/, '');
const stripNl = (s: string): string => lstripNl(rstripNl(s));
