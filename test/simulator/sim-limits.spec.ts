import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SimWorker, startSimWorker } from '../../src/simulator';

/** The embedded simulated workers refuse what would grow them without bound. */
describe('simulated worker: request limits', () => {
  let worker: SimWorker;
  beforeAll(async () => {
    worker = await startSimWorker({ role: 'mixed', tokenizer: 'bytes', maxSeqLen: 2048, maxBodyBytes: 64 * 1024 });
  });
  afterAll(() => worker.close());

  const post = (body: string): Promise<Response> =>
    fetch(`${worker.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  it('answers 400 when prompt plus max_tokens exceeds max_seq_len (max_tokens 1e12)', async () => {
    const res = await post(JSON.stringify({ model: 'm', prompt: 'hi', max_tokens: 1e12 }));
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('max_seq_len');
  });

  it('answers 400 to a prompt longer than max_seq_len', async () => {
    const res = await post(JSON.stringify({ model: 'm', prompt: 'x'.repeat(4000), max_tokens: 1 }));
    expect(res.status).toBe(400);
  });

  it('answers 413 to a body over its limit without reading the rest', async () => {
    const res = await post(JSON.stringify({ model: 'm', prompt: 'x'.repeat(200 * 1024) })).catch((err: Error) => err);
    // The worker may close the connection while the body is still being sent.
    if (res instanceof Response) expect(res.status).toBe(413);
    else expect(res).toBeInstanceOf(Error);
    const ok = await post(JSON.stringify({ model: 'm', prompt: 'hello', max_tokens: 2 }));
    expect(ok.status).toBe(200);
  });
});
