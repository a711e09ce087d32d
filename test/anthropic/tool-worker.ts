import type { ServerResponse } from 'node:http';
import { generationHandler, json, type FakeHandler, type ReceivedRequest } from '../support/fake-worker';

export interface ScriptedCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A generation worker that answers a chat with OpenAI tool_calls (whole, or streamed with the
 * arguments in fragments) when `calls()` gives any, else as the default scripted worker does.
 */
export function toolCallingGeneration(calls: () => ScriptedCall[] | undefined): FakeHandler {
  const plain = generationHandler();
  return (req, res, worker) => {
    const scripted = calls();
    if (!scripted || !req.path.includes('chat')) return plain(req, res, worker);
    const body = req.body ?? {};
    const usage = { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52, prompt_tokens_details: { cached_tokens: 16 } };
    if (!body.stream) {
      return json(res, 200, {
        id: 'chatcmpl-tool',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'Let me look.', tool_calls: scripted.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }, finish_reason: 'tool_calls' }],
        usage,
      });
    }
    streamToolCalls(req, res, scripted, usage);
  };
}

function streamToolCalls(req: ReceivedRequest, res: ServerResponse, calls: ScriptedCall[], usage: Record<string, unknown>): void {
  const model = req.body?.model;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-tool', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: 'Let me look.' }));
  calls.forEach((c, index) => {
    const half = Math.floor(c.arguments.length / 2);
    res.write(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments.slice(0, half) } }] }));
    // Split across two writes mid-event: the reframing must not care where chunks break.
    const rest = chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(half) } }] });
    res.write(rest.slice(0, 10));
    res.write(rest.slice(10));
  });
  res.write(chunk({}, 'tool_calls'));
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-tool', object: 'chat.completion.chunk', model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}
