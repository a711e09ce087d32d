import { countTokensToChat } from '../anthropic/messages-request';
import { HttpApiError } from '../common';
import { anthropicErrorBody } from '../common/errors/api-shape';
import type { ChatMessage, TextTokenizer } from '../tokenizer';

/**
 * `POST /v1/messages/count_tokens` as a TensorRT-LLM worker answers it: the prompt the
 * Messages request would build, rendered through the chat template and tokenized (tool
 * definitions counted as their JSON text), `{"input_tokens": n}`; a request it cannot read
 * gets 400 in Anthropic's envelope.
 */
export function countTokensAnswer(text: string, tokenizer: TextTokenizer): { status: number; body: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refusal(400, 'request body is not valid JSON');
  }
  let prompt: ReturnType<typeof countTokensToChat>;
  try {
    prompt = countTokensToChat(parsed);
  } catch (err) {
    if (err instanceof HttpApiError) return refusal(err.getStatus(), err.body.error.message);
    throw err;
  }
  let tokens = tokenizer.encodeChat(prompt.messages as ChatMessage[]).length;
  if (prompt.tools) tokens += tokenizer.encode(JSON.stringify(prompt.tools)).length;
  return { status: 200, body: JSON.stringify({ input_tokens: tokens }) };
}

function refusal(status: number, message: string): { status: number; body: string } {
  return { status, body: JSON.stringify(anthropicErrorBody(status, message)) };
}
