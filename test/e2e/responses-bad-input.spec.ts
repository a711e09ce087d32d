import { describe, expect, it } from '@jest/globals';
import { ServerRegistry } from '../../src/servers';
import { postJson } from '../support/router-app';
import { useFakeCluster } from '../support/router-cluster';
import { responsesContext, responsesGeneration } from '../support/responses-workers';

const PATH = '/v1/responses';

describe('POST /v1/responses: bad input gets an OpenAI-style 400 naming the field, and reaches no worker', () => {
  const cluster = useFakeCluster({}, { ctx: responsesContext(), gen: responsesGeneration() });

  const cases: [string, unknown, string | null, string][] = [
    ['a non-object body', [1, 2], null, 'invalid_body'],
    ['missing model', { input: 'x' }, 'model', 'missing_required_parameter'],
    ['missing input', { model: 'm' }, 'input', 'missing_required_parameter'],
    ['empty input', { model: 'm', input: '' }, 'input', 'invalid_value'],
    ['empty input list', { model: 'm', input: [] }, 'input', 'invalid_value'],
    ['input of the wrong type', { model: 'm', input: 5 }, 'input', 'invalid_type'],
    ['an input item that is not an object', { model: 'm', input: ['hi'] }, 'input[0]', 'invalid_type'],
    ['a message item without role', { model: 'm', input: [{ type: 'message', content: 'hi' }] }, 'input[0].role', 'invalid_type'],
    ['a message item without content', { model: 'm', input: [{ role: 'user' }] }, 'input[0].content', 'invalid_type'],
    ['instructions not a string', { model: 'm', input: 'x', instructions: ['a'] }, 'instructions', 'invalid_type'],
    ['max_output_tokens not an integer', { model: 'm', input: 'x', max_output_tokens: 2.5 }, 'max_output_tokens', 'invalid_type'],
    ['max_output_tokens below 1', { model: 'm', input: 'x', max_output_tokens: 0 }, 'max_output_tokens', 'invalid_value'],
    ['stream not a boolean', { model: 'm', input: 'x', stream: 'yes' }, 'stream', 'invalid_type'],
    ['tools not a list', { model: 'm', input: 'x', tools: {} }, 'tools', 'invalid_type'],
    ['previous_response_id (no response store)', { model: 'm', input: 'x', previous_response_id: 'resp_1' }, 'previous_response_id', 'unsupported_parameter'],
    ['a stored conversation', { model: 'm', input: 'x', conversation: 'conv_1' }, 'conversation', 'unsupported_parameter'],
    ['background mode', { model: 'm', input: 'x', background: true }, 'background', 'unsupported_parameter'],
    ['a stored prompt template', { model: 'm', input: 'x', prompt: { id: 'pmpt_1' } }, 'prompt', 'unsupported_parameter'],
    ['a chat_template of its own (allow_request_chat_template is off)', { model: 'm', input: 'x', chat_template: '{{ messages }}' }, 'chat_template', 'chat_template_not_allowed'],
  ];

  it.each(cases)('%s', async (_name, body, param, code) => {
    const res = await postJson(`${cluster.url}${PATH}`, body);
    expect(res.status).toBe(400);
    expect(res.json.error).toEqual({ message: expect.any(String), type: 'invalid_request_error', param, code });
  });

  it('malformed JSON and a wrong content type are refused as on the other routes', async () => {
    const bad = await fetch(`${cluster.url}${PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": "m", "input": ' });
    expect(bad.status).toBe(400);
    const text = await fetch(`${cluster.url}${PATH}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
  });

  it('a null previous_response_id is no request for state', async () => {
    const res = await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'x', previous_response_id: null });
    expect(res.status).toBe(200);
  });

  it('the refused requests reached no worker and left no load behind', () => {
    expect(cluster.ctx.requests(PATH)).toHaveLength(1);
    expect(cluster.gen.requests(PATH)).toHaveLength(1);
    expect(cluster.router.app.get(ServerRegistry).list().every((s) => s.activeRequests === 0)).toBe(true);
  });
});
