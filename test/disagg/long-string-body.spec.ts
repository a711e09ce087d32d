import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rememberIdListText } from '../../src/common/id-list-text';
import { serializeRequestText } from '../../src/disagg/serialize';
import { SLICED_BODY_CHARS, TextParts } from '../../src/http-session';
import { startFakeCluster, type FakeCluster } from '../support/fake-cluster';
import { postJson } from '../support/router-app';

/**
 * A worker body holding a long string the way JSON writes it as is (a 16 MB prompt) is sent
 * as parts, the string itself one of them (README "Worker body encoding"): no copy of it into a
 * JSON text, none into a Buffer. The parts must make the very text JSON.stringify writes.
 */
const long = (unit: string): string => unit.repeat(Math.ceil((SLICED_BODY_CHARS + 7) / unit.length));

describe('worker bodies with a long string', () => {
  const ascii = long('lorem ipsum dolor sit amet, ');
  const unicode = long('é€ 漢字 🚀 text ');

  it.each([
    { what: 'an ASCII prompt', body: { model: 'm', prompt: ascii, max_tokens: 1, stream: false }, longs: [ascii] },
    { what: 'a prompt with multi-byte characters and surrogate pairs', body: { prompt: unicode, model: 'm' }, longs: [unicode] },
    { what: 'two long members among nested ones and undefined ones', body: { a: ascii, nested: { x: [1, 'two', null], y: undefined }, skipped: undefined, b: unicode, n: 3 }, longs: [ascii, unicode] },
    { what: 'a chat message\'s long content', body: { model: 'm', messages: [{ role: 'system', content: 'terse' }, { role: 'user', content: unicode, name: undefined }], max_tokens: 1 }, longs: [unicode] },
    { what: 'long strings in arrays beside items JSON writes as null', body: { input: [ascii, undefined, () => 1, { deep: { deeper: [unicode] } }], tail: [] }, longs: [ascii, unicode] },
  ])('writes $what in parts, the long strings as they are, exactly as JSON.stringify', ({ body, longs }) => {
    const text = serializeRequestText(body);
    expect(text).toBeInstanceOf(TextParts);
    const parts = (text as TextParts).parts;
    // Compared as booleans: a failure must not print megabytes.
    for (const value of longs) expect(parts.includes(value)).toBe(true);
    expect(String(text) === JSON.stringify(body)).toBe(true);
    expect((text as TextParts).byteLength).toBe(Buffer.byteLength(JSON.stringify(body)));
    expect((text as TextParts).length).toBe(JSON.stringify(body).length);
  });

  it.each([
    { what: 'a quote', text: `${ascii}"` },
    { what: 'a newline', text: `${ascii}\n` },
    { what: 'a backslash', text: `\\${ascii}` },
    { what: 'a lone surrogate', text: `${ascii}\ud800x` },
  ])('writes a long string with $what (which JSON escapes) as one JSON text', ({ text }) => {
    const body = { model: 'm', prompt: text };
    expect(serializeRequestText(body) === JSON.stringify(body)).toBe(true);
  });

  it('splices remembered id lists in place and puts the given last member last', () => {
    const ids = Array.from({ length: 100 }, (_, i) => i * 3);
    const idText = `[ ${ids.join(' , ')} ]`;
    rememberIdListText(ids, idText);
    const text = serializeRequestText({ model: 'm', prompt_token_ids: ids, messages: ascii }, { key: 'prompt', text: '[1, 2]' });
    expect(text).toBeInstanceOf(TextParts);
    expect(String(text) === `{"model":"m","prompt_token_ids":${idText},"messages":${JSON.stringify(ascii)},"prompt":[1, 2]}`).toBe(true);
  });

  describe('through the router', () => {
    let cluster: FakeCluster;
    beforeAll(async () => {
      cluster = await startFakeCluster({});
    });
    afterAll(async () => cluster?.close());

    it('gives the context worker the client prompt byte for byte, with the right Content-Length', async () => {
      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: unicode, max_tokens: 1 });
      expect(res.status).toBe(200);
      const ctx = cluster.ctx.requests('/v1/completions').at(-1)!;
      // Compared as a boolean: a failure must not print megabytes.
      expect(ctx.body?.prompt === unicode).toBe(true);
      expect(ctx.headers['content-length']).toBe(String(ctx.raw.length));
    });
  });
});
