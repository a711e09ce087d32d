import { invalidRequest } from '../common';
import { isObject, type Json } from './json';

/**
 * Client tools as chat function tools, and tool_choice as the chat pipeline can honour it:
 * `auto` and `none`. As TensorRT-LLM does, `any`, a named `tool` and
 * `disable_parallel_tool_use` are refused (a forced call comes back without parsed
 * arguments), and server tools (web search, ...) are refused unless tool_choice is `none`.
 */
export function chatToolsOf(tools: unknown, choice: unknown): { tools: Json[] | undefined; toolChoice: string | undefined } {
  const choiceType = toolChoiceType(choice);
  const forbidsCalls = choiceType === 'none';
  let out: Json[] | undefined;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw invalidRequest('tools: must be an array', 'tools', 'invalid_type');
    out = [];
    tools.forEach((tool: unknown, i: number) => {
      const at = `tools.${i}`;
      if (!isObject(tool) || typeof tool.name !== 'string' || !tool.name) throw invalidRequest(`${at}: must be an object with a name`, at, 'invalid_type');
      if (tool.input_schema === undefined || tool.input_schema === null) {
        // A tool without a schema is one the API itself would run (web search, ...).
        if (forbidsCalls) return;
        throw invalidRequest(`${at}: tool '${tool.name}'${typeof tool.type === 'string' ? ` (type ${tool.type})` : ''} needs an input_schema: server tools are not supported by this server`, at);
      }
      if (!isObject(tool.input_schema)) throw invalidRequest(`${at}.input_schema: must be an object`, `${at}.input_schema`, 'invalid_type');
      const fn: Json = { name: tool.name, parameters: tool.input_schema };
      if (typeof tool.description === 'string') fn.description = tool.description;
      if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
      out!.push({ type: 'function', function: fn });
    });
    if (out.length === 0) out = undefined;
  }
  if (choiceType === undefined) return { tools: out, toolChoice: out ? 'auto' : undefined };
  if (choiceType === 'none') return { tools: out, toolChoice: 'none' };
  if (!out) throw invalidRequest(`tool_choice: type '${choiceType}' needs at least one client tool`, 'tool_choice');
  if (choiceType === 'auto') return { tools: out, toolChoice: 'auto' };
  throw invalidRequest(`tool_choice: type '${choiceType}' is not supported (a forced call comes back without parsed arguments); use 'auto' and name the tool in the prompt`, 'tool_choice');
}

function toolChoiceType(choice: unknown): string | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (!isObject(choice) || typeof choice.type !== 'string') throw invalidRequest('tool_choice: must be an object with a type', 'tool_choice', 'invalid_type');
  if (!['auto', 'any', 'tool', 'none'].includes(choice.type)) throw invalidRequest(`tool_choice.type: '${choice.type}' is not one of 'auto', 'any', 'tool', 'none'`, 'tool_choice.type');
  if (choice.disable_parallel_tool_use === true && choice.type !== 'none') {
    throw invalidRequest('tool_choice.disable_parallel_tool_use: true is not supported', 'tool_choice.disable_parallel_tool_use');
  }
  return choice.type;
}
