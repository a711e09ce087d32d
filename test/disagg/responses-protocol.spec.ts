import { describe, expect, it } from '@jest/globals';
import { HttpApiError } from '../../src/common';
import { protocolOf } from '../../src/disagg/kind-protocols';
import { replayResponseEvents } from '../../src/disagg/responses-events';
import { SseUsageRewriter } from '../../src/disagg/sse-usage-rewriter';
import { finishedContextAnswer, generationParams, generationRequestText, parseContextAnswer, type ContextAnswerOk } from '../../src/disagg/trtllm-protocol';
import { CTX_PARAMS, responseObject } from '../support/responses-workers';

type Body = Record<string, unknown>;
const RESPONSES = protocolOf('responses');

function frames(text: string): { event: string; data: Body }[] {
  expect(text.endsWith('\n\n')).toBe(true);
  return text.slice(0, -2).split('\n\n').map((frame) => {
    const [eventLine, dataLine] = frame.split('\n');
    expect(eventLine.startsWith('event: ')).toBe(true);
    return { event: eventLine.slice(7), data: JSON.parse(dataLine.slice(6)) as Body };
  });
}

describe('the Responses context answer', () => {
  const answer = (fields: Body = {}): string => JSON.stringify(responseObject({ output: [], status: 'incomplete', finish_reason: 'length', disaggregated_params: CTX_PARAMS, prompt_token_ids: [5, 6, 7], ...fields }));

  it('carries the handoff at its top level; the generation body gets it with the ids and store: false', () => {
    const parsed = parseContextAnswer(answer(), 'responses');
    if (!parsed.ok) throw new Error(parsed.problem);
    expect(parsed.finished).toBe(false);
    const gen = JSON.parse(String(generationRequestText('responses', { model: 'm', input: 'hi', store: true, stream: true }, parsed, generationParams(parsed, 9, undefined)))) as Body;
    expect(gen).toEqual({ model: 'm', input: 'hi', store: false, stream: true, prompt_token_ids: [5, 6, 7], disaggregated_params: { ...CTX_PARAMS, request_type: 'generation_only', disagg_request_id: 9 } });
  });

  it('is a bad answer without disaggregated_params unless finished, as for chat', () => {
    expect(parseContextAnswer(answer({ disaggregated_params: undefined }), 'responses')).toMatchObject({ ok: false });
    expect(parseContextAnswer(answer({ disaggregated_params: undefined, finish_reason: 'stop', status: 'completed' }), 'responses')).toMatchObject({ ok: true, finished: true });
    // A chat-shaped reading would have refused it for having no choices.
    expect(parseContextAnswer(answer(), 'chat')).toEqual({ ok: false, problem: 'a context answer without choices' });
  });

  it('reaches the client without the handoff once finished', () => {
    const parsed = parseContextAnswer(answer({ finish_reason: 'stop', status: 'completed', prompt_token_ids_b64: 'AQAAAA==' }), 'responses') as ContextAnswerOk;
    const client = finishedContextAnswer('responses', parsed);
    for (const key of ['disaggregated_params', 'finish_reason', 'prompt_token_ids', 'prompt_token_ids_b64']) expect(client).not.toHaveProperty(key);
    expect(client.status).toBe('completed');
  });
});

describe('replaying a whole response as its event sequence', () => {
  it('numbers the events from 0 and ends by the status: incomplete, with its details', () => {
    const response = responseObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    const events = frames(replayResponseEvents(response));
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_e, i) => i));
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    const last = events.at(-1)!;
    expect(last.event).toBe('response.incomplete');
    expect((last.data.response as Body).incomplete_details).toEqual({ reason: 'max_output_tokens' });
    // The opening snapshot is in progress and empty.
    expect(events[0].data.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
  });

  it('replays tool calls and reasoning as their own events', () => {
    const output = [
      { id: 'rs_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'think' }] },
      { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
    ];
    const events = frames(replayResponseEvents(responseObject({ output })));
    expect(events.map((e) => e.event)).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta', 'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      'response.completed',
    ]);
    expect(events[10].data).toMatchObject({ item_id: 'fc_1', output_index: 1, name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(events[8].data.item).toMatchObject({ type: 'function_call', arguments: '' });
  });
});

describe('a relayed Responses stream', () => {
  const event = (type: string, fields: Body): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;

  it('sees its terminal event even split across chunks, and not in generated text', () => {
    const text = event('response.output_text.delta', { delta: 'say "type":"response.completed"\nevent: response.completed\n' });
    const rewriter = new SseUsageRewriter(undefined, RESPONSES);
    rewriter.push(Buffer.from(text));
    expect(rewriter.watch.ended).toBe(false);
    const end = event('response.completed', { response: responseObject() });
    rewriter.push(Buffer.from(end.slice(0, 17)));
    expect(rewriter.watch.ended).toBe(false);
    rewriter.push(Buffer.from(end.slice(17)));
    expect(rewriter.watch.ended).toBe(true);
  });

  it('rewrites the usage inside the terminal event, keeping its event line', () => {
    const rewriter = new SseUsageRewriter({ prompt_tokens: 5, cached_tokens: 2 }, RESPONSES);
    const out = String(rewriter.push(Buffer.from(event('response.completed', { response: responseObject() }))));
    const [eventLine, dataLine] = out.split('\n');
    expect(eventLine).toBe('event: response.completed');
    const usage = ((JSON.parse(dataLine.slice(6)) as Body).response as Body).usage;
    expect(usage).toMatchObject({ input_tokens: 5, input_tokens_details: { cached_tokens: 2 }, output_tokens: 3, total_tokens: 8 });
    expect(rewriter.watch.ended).toBe(true);
  });
});

describe('a Responses stream that breaks after its head', () => {
  it('ends with error and response.failed from the opening snapshot, numbered after what was relayed', () => {
    const watch = RESPONSES.watchStream();
    const opening = `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress', output: [] } })}\n\n`;
    // Split inside the opening event and inside an event's blank line.
    watch.see(opening.slice(0, 40));
    watch.see(`${opening.slice(40)}event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"delta":"x"}\n`);
    watch.see('\n');
    const text = watch.errorEvents(new HttpApiError(502, 'the worker went away'));
    const events = frames(text);
    expect(events.map((e) => [e.event, e.data.sequence_number])).toEqual([['error', 2], ['response.failed', 3]]);
    expect(events[1].data.response).toEqual({ id: 'resp_1', status: 'failed', output: [], error: { code: 'upstream_error', message: 'the worker went away' } });
    expect(watch.ended).toBe(false);
  });

  it('ends with the error event alone when no opening snapshot went by', () => {
    const watch = RESPONSES.watchStream();
    watch.see('event: response.output_text.delta\ndata: {"type":"response.output_text.delta"}\n\n');
    expect(frames(watch.errorEvents(new HttpApiError(504, 'silent'))).map((e) => e.event)).toEqual(['error']);
  });
});
