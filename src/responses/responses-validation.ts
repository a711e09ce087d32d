import { invalidRequest } from '../common';
import { isPlainObject, objectWithModel, optional } from '../openai/request-validation';

type Body = Record<string, unknown>;

/**
 * Members that ask for state kept between requests: the router keeps no response store (nor do
 * the workers behind it, which get `store: false`), so honouring them is impossible and ignoring
 * them would answer another question than the one asked.
 */
const STATEFUL: ReadonlyArray<[string, string]> = [
  ['previous_response_id', "'previous_response_id' is not supported: the router keeps no response store; send the whole conversation in 'input'"],
  ['conversation', "'conversation' is not supported: the router keeps no conversation store; send the whole conversation in 'input'"],
];

/**
 * What the router relies on in a Responses request, and what it cannot serve, refused with
 * clear 400s; everything else goes to the workers untouched (they validate the rest).
 */
export function validateResponsesRequest(body: unknown): Body {
  const b = objectWithModel(body);
  for (const [key, message] of STATEFUL) {
    if (b[key] !== undefined && b[key] !== null) throw invalidRequest(message, key, 'unsupported_parameter');
  }
  if (b.background === true) throw invalidRequest("'background' is not supported: the router keeps no response store to poll", 'background', 'unsupported_parameter');
  // As TensorRT-LLM's workers: no stored prompt templates.
  if (b.prompt !== undefined && b.prompt !== null) throw invalidRequest("'prompt' (a stored prompt template) is not supported", 'prompt', 'unsupported_parameter');
  checkInput(b.input);
  if (b.instructions !== undefined && b.instructions !== null && typeof b.instructions !== 'string') {
    throw invalidRequest("'instructions' must be a string", 'instructions', 'invalid_type');
  }
  for (const key of ['stream', 'store', 'background', 'parallel_tool_calls']) optional(b, key, 'boolean');
  for (const key of ['temperature', 'top_p']) optional(b, key, 'number');
  for (const key of ['max_output_tokens', 'max_tool_calls', 'top_logprobs']) optional(b, key, 'integer');
  if (typeof b.max_output_tokens === 'number' && b.max_output_tokens < 1) throw invalidRequest("'max_output_tokens' must be at least 1", 'max_output_tokens');
  for (const key of ['text', 'reasoning', 'metadata', 'disaggregated_params']) {
    if (b[key] !== undefined && b[key] !== null && !isPlainObject(b[key])) throw invalidRequest(`'${key}' must be an object`, key, 'invalid_type');
  }
  if (b.tools !== undefined && b.tools !== null) {
    if (!Array.isArray(b.tools)) throw invalidRequest("'tools' must be an array", 'tools', 'invalid_type');
    b.tools.forEach((t, i) => {
      if (!isPlainObject(t) || typeof t.type !== 'string') throw invalidRequest(`'tools[${i}]' must be an object with a string 'type'`, `tools[${i}]`, 'invalid_type');
    });
  }
  return b;
}

function checkInput(input: unknown): void {
  if (input === undefined || input === null) throw invalidRequest("'input' is required", 'input', 'missing_required_parameter');
  if (typeof input === 'string') {
    if (input.length === 0) throw invalidRequest("'input' must not be empty", 'input');
    return;
  }
  if (!Array.isArray(input)) throw invalidRequest("'input' must be a string or an array of input items", 'input', 'invalid_type');
  if (input.length === 0) throw invalidRequest("'input' must not be empty", 'input');
  input.forEach((item: unknown, i) => {
    const param = `input[${i}]`;
    if (!isPlainObject(item)) throw invalidRequest(`'${param}' must be an object`, param, 'invalid_type');
    if (item.type !== undefined && typeof item.type !== 'string') throw invalidRequest(`'${param}.type' must be a string`, `${param}.type`, 'invalid_type');
    const message = item.type === undefined || item.type === 'message';
    if (!message) return;
    if (typeof item.role !== 'string') throw invalidRequest(`'${param}' must be a message with a string 'role'`, `${param}.role`, 'invalid_type');
    if (typeof item.content !== 'string' && !Array.isArray(item.content)) {
      throw invalidRequest(`'${param}.content' must be a string or an array of content parts`, `${param}.content`, 'invalid_type');
    }
  });
}
