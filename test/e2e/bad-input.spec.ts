import { describe, expect, it } from '@jest/globals';
import { ServerRegistry } from '../../src/servers';
import { useFakeCluster } from '../support/router-cluster';
import { postJson } from '../support/router-app';

describe('bad input gets an OpenAI-style error with the right status', () => {
  const cluster = useFakeCluster({ limits: { max_body_bytes: 64 * 1024 } });

  const cases: [string, string, unknown, number, string | null][] = [
    ['malformed JSON', '/v1/completions', '{"model": "m", "prompt": ', 400, null],
    ['a non-object body', '/v1/completions', '[1,2]', 400, null],
    ['an empty body', '/v1/completions', '', 400, null],
    ['a __proto__ key', '/v1/completions', '{"model": "m", "prompt": "x", "__proto__": {"admin": true}}', 400, null],
    ['a __proto__ key spelt with escapes', '/v1/completions', '{"model": "m", "prompt": "x", "\\u005f_proto__": {"admin": true}}', 400, null],
    ['a constructor.prototype key', '/v1/chat/completions', '{"model": "m", "messages": [{"role": "user", "constructor": {"prototype": {"admin": true}}}]}', 400, null],
    ['missing model', '/v1/completions', { prompt: 'x' }, 400, 'model'],
    ['model of the wrong type', '/v1/completions', { model: 5, prompt: 'x' }, 400, 'model'],
    ['missing prompt', '/v1/completions', { model: 'm' }, 400, 'prompt'],
    ['empty prompt', '/v1/completions', { model: 'm', prompt: '' }, 400, 'prompt'],
    ['empty token list', '/v1/completions', { model: 'm', prompt: [] }, 400, 'prompt'],
    ['batched prompts', '/v1/completions', { model: 'm', prompt: ['a', 'b'] }, 400, 'prompt'],
    ['prompt of the wrong type', '/v1/completions', { model: 'm', prompt: { a: 1 } }, 400, 'prompt'],
    ['stream not a boolean', '/v1/completions', { model: 'm', prompt: 'x', stream: 'yes' }, 400, 'stream'],
    ['max_tokens not an integer', '/v1/completions', { model: 'm', prompt: 'x', max_tokens: 1.5 }, 400, 'max_tokens'],
    ['missing messages', '/v1/chat/completions', { model: 'm' }, 400, 'messages'],
    ['empty messages', '/v1/chat/completions', { model: 'm', messages: [] }, 400, 'messages'],
    ['a message without role', '/v1/chat/completions', { model: 'm', messages: [{ content: 'x' }] }, 400, 'messages[0]'],
  ];

  it.each(cases)('%s', async (_name, path, body, status, param) => {
    const res = await postJson(`${cluster.router.url}${path}`, body);
    expect(res.status).toBe(status);
    const error = res.json.error as Record<string, unknown>;
    expect(error).toEqual({ message: expect.any(String), type: 'invalid_request_error', param, code: expect.any(String) });
  });

  it('a body over the limit is 413', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'x'.repeat(100 * 1024) });
    expect(res.status).toBe(413);
    expect((res.json.error as Record<string, unknown>).code).toBe('request_too_large');
  });

  it('a wrong content type is 415', async () => {
    const res = await fetch(`${cluster.router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('an unknown route is 404 JSON', async () => {
    const res = await postJson(`${cluster.router.url}/v1/nothing`, {});
    expect(res.status).toBe(404);
    expect((res.json.error as Record<string, unknown>).type).toBe('not_found_error');
  });

  it('none of it reached a worker or left load behind', () => {
    expect(cluster.ctx.requests('/v1/completions')).toHaveLength(0);
    expect(cluster.gen.requests('/v1/completions')).toHaveLength(0);
    expect(cluster.router.app.get(ServerRegistry).list().every((s) => s.activeRequests === 0)).toBe(true);
  });
});
