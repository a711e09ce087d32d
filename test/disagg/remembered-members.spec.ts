import { describe, expect, it, jest } from '@jest/globals';
import { IdListJson, idListMembers, rememberIdListJson, rememberIdListText } from '../../src/common/id-list-text';
import { forgetMemberTexts, serializeRequest, serializeRequestText } from '../../src/disagg/serialize';

/**
 * Worker bodies are written member by member, the text of large object and array members
 * remembered for the next body holding the same object (the context and generation bodies
 * share the client's messages): every body must still be exactly what JSON.stringify writes.
 */
describe('worker bodies written with remembered members', () => {
  const messages = Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} "quoted" \n é 🚀 ${'x'.repeat(i * 10)}`, name: undefined }));
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }];

  it.each([
    { what: 'a chat body', body: { model: 'm', messages, max_tokens: 5, stream: true } },
    { what: 'members JSON leaves out or writes as null', body: { a: undefined, f: () => 1, s: Symbol('s'), n: null, arr: [undefined, () => 1, 1], nan: Number.NaN, messages } },
    { what: 'keys that need escaping and integer-like keys', body: { 'we"ird\n': 1, 2: 'two', 1: 'one', messages, tools } },
    { what: 'a member with a toJSON', body: { messages, when: new Date(0), custom: { toJSON: (key: string) => `key ${key}` } } },
    { what: 'an empty object', body: {} },
  ])('writes $what as JSON.stringify does, the first time and again', ({ body }) => {
    expect(serializeRequest(body)).toBe(JSON.stringify(body));
    expect(serializeRequest(body)).toBe(JSON.stringify(body));
    expect(serializeRequestText({ ...body, stream: false })).toBe(JSON.stringify({ ...body, stream: false }));
  });

  it('writes the shared messages the same way in the context and generation bodies, beside spliced ids', () => {
    const ids = Array.from({ length: 300 }, (_, i) => i * 7);
    rememberIdListText(ids, JSON.stringify(ids));
    const context = { model: 'm', messages, prompt_token_ids: ids, stream: false, disaggregated_params: { request_type: 'context_only' } };
    const generation = { model: 'm', messages, stream: true, disaggregated_params: { request_type: 'generation_only', ctx_request_id: 7 } };
    const { prompt_token_ids: _ids, ...rest } = context;
    expect(serializeRequest(context)).toBe(JSON.stringify({ ...rest, prompt_token_ids: ids }));
    expect(serializeRequestText(generation, { key: 'prompt_token_ids', text: JSON.stringify(ids) })).toBe(JSON.stringify({ ...generation, prompt_token_ids: ids }));
  });

  it('writes a body with a long spliced id list as its UTF-8 bytes, the same JSON as the text', () => {
    const ids = Array.from({ length: 3000 }, (_, i) => (i * 7919) % 151_000);
    // As the tokenizer's pieces make it: runs of members, joined only when written.
    rememberIdListJson(ids, IdListJson.ofMembers([0, 1000, 2000].map((at) => idListMembers(Int32Array.from(ids.slice(at, at + 1000))))));
    const context = { model: 'm', messages, prompt_token_ids: ids, stream: false, disaggregated_params: { request_type: 'context_only' } };
    const { prompt_token_ids: _ids, ...rest } = context;
    const expected = JSON.stringify({ ...rest, prompt_token_ids: ids });
    // Written member by member: the list is never joined into one text on the way.
    const joined = jest.spyOn(IdListJson.prototype, 'text', 'get');
    const bytes = serializeRequestText(context);
    expect(joined).not.toHaveBeenCalled();
    joined.mockRestore();
    expect(Buffer.isBuffer(bytes)).toBe(true);
    expect((bytes as Buffer).toString('utf8') === expected).toBe(true);
    expect((bytes as Buffer).length).toBe(Buffer.byteLength(expected));
    expect(serializeRequest(context) === expected).toBe(true);
    // The generation body with the context answer's ids as the last member, bytes too.
    const generation = { model: 'm', messages, stream: true, disaggregated_params: { request_type: 'generation_only' } };
    const echoed = serializeRequestText(generation, { key: 'prompt_token_ids', text: JSON.stringify(ids) });
    expect(Buffer.isBuffer(echoed) && echoed.toString('utf8') === JSON.stringify({ ...generation, prompt_token_ids: ids })).toBe(true);
    // Both at once, in the order the text would have them; an empty rest has no comma to add.
    const both = serializeRequestText({ prompt: ids }, { key: 'x', text: '[1]' });
    expect(Buffer.isBuffer(both) && both.toString('utf8') === `{"prompt":${JSON.stringify(ids)},"x":[1]}`).toBe(true);
  });

  it("forgets a body's remembered members once told: the next body writes them anew", () => {
    const own = messages.map((m) => ({ ...m }));
    const body = { model: 'm', messages: own };
    expect(serializeRequest(body)).toBe(JSON.stringify(body));
    forgetMemberTexts(body);
    // Changed after the forget (the router itself never does this): the text follows.
    own[0].content = 'changed';
    expect(serializeRequest(body)).toBe(JSON.stringify(body));
    expect(serializeRequest(body)).toContain('"changed"');
  });
});
