import { describe, expect, it } from '@jest/globals';
import { rewriteUsage } from '../../src/disagg/usage';
import { contextHandler } from '../support/fake-worker';
import { useFakeCluster } from '../support/router-cluster';
import { postJson } from '../support/router-app';

describe('rewriteUsage', () => {
  it('takes prompt accounting from the context phase and says that it changed something', () => {
    const usage = { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 };
    expect(rewriteUsage(usage, { prompt_tokens: 10, cached_tokens: 3 })).toBe(true);
    expect(usage).toEqual({ prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_tokens_details: { cached_tokens: 3 } });
  });

  it('says nothing changed when the generation answer had it right', () => {
    const usage = { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_tokens_details: { cached_tokens: 3 } };
    expect(rewriteUsage(usage, { prompt_tokens: 10, cached_tokens: 3 })).toBe(false);
    expect(rewriteUsage(usage, {})).toBe(false);
  });

  it('leaves total_tokens alone without completion_tokens', () => {
    const usage: Record<string, unknown> = { prompt_tokens: 1 };
    expect(rewriteUsage(usage, { prompt_tokens: 7 })).toBe(true);
    expect(usage).toEqual({ prompt_tokens: 7 });
    expect('total_tokens' in usage).toBe(false);
  });
});

describe('a generation answer whose usage is already right', () => {
  // Formatted as no JSON.stringify would: the router must pass these bytes on untouched.
  const RIGHT = '{ "id": "cmpl-gen",  "object": "text_completion", "choices": [{"index": 0, "text": "AB", "finish_reason": "length"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "prompt_tokens_details": {"cached_tokens": 2}} }';
  const WRONG = RIGHT.replace('"prompt_tokens": 5', '"prompt_tokens": 1');
  let answer = RIGHT;
  const cluster = useFakeCluster(
    {},
    {
      ctx: contextHandler({ promptTokenIds: [1, 2, 3, 4, 5] }),
      gen: (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
        res.end(answer);
      },
    },
  );

  it('reaches the client byte for byte', async () => {
    answer = RIGHT;
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(200);
    expect(res.text).toBe(RIGHT);
  });

  it('is rewritten when the prompt accounting differs', async () => {
    answer = WRONG;
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(200);
    expect(res.text).not.toBe(WRONG);
    expect(res.json.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } });
  });
});
