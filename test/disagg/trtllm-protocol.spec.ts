import { describe, expect, it } from '@jest/globals';
import { unpack } from 'msgpackr';
import { generationParams, generationRequest, generationRequestText, parseContextAnswer, wholeContextAnswer, type ContextAnswerOk } from '../../src/disagg/trtllm-protocol';

const params = { request_type: 'context_only', ctx_request_id: 7, first_gen_tokens: [42], encoded_opaque_state: 'c3RhdGU=' };
const answer = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'cmpl-1',
  choices: [{ index: 0, text: 'A', finish_reason: 'length', disaggregated_params: params }],
  prompt_token_ids: [5, 6, 7, 8],
  usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
  ...extra,
});

function ok(text: string): ContextAnswerOk {
  const parsed = parseContextAnswer(text);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed;
}

/** What the generation body was before the ids were spliced in as text: parse, copy, stringify. */
function reference(kind: 'completion' | 'chat', body: Record<string, unknown>, ctx: Record<string, unknown>, disaggId: number): unknown {
  const choice = (ctx.choices as Record<string, unknown>[])[0];
  const gen: Record<string, unknown> = { ...body, disaggregated_params: { ...(choice.disaggregated_params as object), request_type: 'generation_only', disagg_request_id: disaggId } };
  const ids = ctx.prompt_token_ids;
  if (Array.isArray(ids) && ids.length) gen[kind === 'completion' ? 'prompt' : 'prompt_token_ids'] = ids;
  return gen;
}

describe('the context answer and the generation request', () => {
  it('builds the same generation request as a full parse would, for every layout of the ids', () => {
    const layouts = [
      JSON.stringify(answer()),
      JSON.stringify(answer(), null, 2),
      JSON.stringify({ ...answer(), prompt_token_ids: [] }),
      JSON.stringify({ ...answer(), prompt_token_ids: undefined }),
      // The member name inside a string value and in a nested object: only the top level counts.
      JSON.stringify({ note: '"prompt_token_ids":[1,2]', nested: { prompt_token_ids: [9, 9] }, ...answer() }),
      // Ids a strict integer list does not describe (exponents): parsed with the rest.
      JSON.stringify(answer()).replace('[5,6,7,8]', '[5,6,7,8e0]'),
      // Blanks around some commas only, after a compact run or before one.
      JSON.stringify(answer()).replace('[5,6,7,8]', '[5,6 , 7,8]'),
      JSON.stringify(answer()).replace('[5,6,7,8]', '[ 5, 6,7 ,8 ]'),
    ];
    for (const text of layouts) {
      const ctx = JSON.parse(text) as Record<string, unknown>;
      for (const kind of ['completion', 'chat'] as const) {
        const body = kind === 'completion' ? { model: 'm', prompt: 'hello', stream: true } : { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
        const got = JSON.parse(String(generationRequestText(kind, body, ok(text), generationParams(ok(text), 11, undefined)))) as unknown;
        expect({ text, got }).toEqual({ text, got: reference(kind, body, ctx, 11) });
        // A msgpack worker gets the same request.
        expect({ text, got: unpack(generationRequest(kind, body, ok(text), generationParams(ok(text), 11, undefined)).msgpack) as unknown }).toEqual({ text, got });
      }
      expect(wholeContextAnswer(ok(text))).toEqual(ctx);
    }
  });

  it('does not parse the ids it passes on, but keeps the rest of the answer', () => {
    const parsed = ok(JSON.stringify(answer()));
    expect(parsed.promptIdsText).toBe('[5,6,7,8]');
    for (const list of ['[5,6 , 7,8]', '[ 5, 6,7 ,8 ]', '[5, 6, 7, 8]']) expect(ok(JSON.stringify(answer()).replace('[5,6,7,8]', list)).promptIdsText).toBe(list);
    expect(parsed.json.usage).toEqual({ prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 });
    expect(parsed.choice.disaggregated_params).toEqual(params);
  });

  it('still rejects a malformed answer, whatever its ids look like', () => {
    const good = JSON.stringify(answer());
    const bad = [
      good.replace('[5,6,7,8]', '[5,,6]'),
      good.replace('[5,6,7,8]', '[5,6,7,8'),
      good.replace('[5,6,7,8]', '[5,6 7,8]'),
      good.replace('[5,6,7,8]', '[5,6,7,]'),
      good.slice(0, -1),
      good.replace('"usage"', 'usage'),
      `${good}x`,
      JSON.stringify(answer({ choices: [] })),
      JSON.stringify(answer({ choices: [{ index: 0, finish_reason: 'length' }] })),
      '[1,2,3]',
      '{"prompt_token_ids":[1,2]}',
    ];
    for (const text of bad) expect({ text, ok: parseContextAnswer(text).ok }).toEqual({ text, ok: false });
    expect(parseContextAnswer(good.replace('[5,6,7,8]', '[5,,6]'))).toEqual({ ok: false, problem: 'an answer that is not a JSON object' });
  });
});
