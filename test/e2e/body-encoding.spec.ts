import { afterEach, describe, expect, it } from '@jest/globals';
import { unpack, Unpackr } from 'msgpackr';
import type { AppConfigInput } from '../../src/config';
import { startSimCluster, type SimCluster } from '../../src/simulator';
import { LogCapture } from '../observability/log-capture';
import { expectSettled } from '../reliability/support/leaks';
import { contextHandler, FakeWorker, generationHandler, json, type FakeHandler, type ReceivedRequest } from '../support/fake-worker';
import { postJson, startRouter, type RunningRouter } from '../support/router-app';
import { postStream, readSse } from '../support/sse';
import { checkingSignatures, type SignatureCheck } from '../support/trtllm-signatures';

/**
 * Worker bodies as msgpack (`X-TRTLLM-Msgpack: 1`, README "Worker body encoding"): scripted
 * workers decode them with another msgpack library than the router's and check the header;
 * older workers refuse them as TensorRT-LLM's FastAPI workers do.
 */
const QUIET_HEALTH = { startup_wait_s: 10, interval_s: 600, timeout_s: 5 };
const PROMPT_IDS = [11, 12, 13, 14, 15, 16, 17];
const body = { model: 'm', prompt: 'hello', max_tokens: 4 };

describe('worker body encoding', () => {
  let router: RunningRouter | undefined;
  let sim: SimCluster | undefined;
  const workers: FakeWorker[] = [];
  afterEach(async () => {
    await router?.close();
    await sim?.close();
    for (const w of workers.splice(0)) await w.close();
    router = undefined;
    sim = undefined;
  });

  const worker = async (kind: 'ctx' | 'gen', opts: { old?: boolean } = {}): Promise<FakeWorker> => {
    const w = await new FakeWorker(kind === 'ctx' ? contextHandler({ promptTokenIds: PROMPT_IDS }) : generationHandler({ chunks: 4 })).start();
    w.refusesMsgpack = opts.old ?? false;
    workers.push(w);
    return w;
  };
  const start = async (encoding: 'auto' | 'json' | 'msgpack' | undefined, ctx: FakeWorker[], gen: FakeWorker[], extra: AppConfigInput = {}, logs?: LogCapture): Promise<RunningRouter> =>
    (router = await startRouter(
      {
        health: QUIET_HEALTH,
        ...extra,
        ...(encoding ? { http_session: { body_encoding: encoding } } : {}),
        context_servers: { urls: ctx.map((w) => w.url), ...extra.context_servers },
        generation_servers: { urls: gen.map((w) => w.url), ...extra.generation_servers },
        ...(logs ? { logging: { level: 'warn' } } : {}),
      },
      undefined,
      logs ? { logDestination: logs } : {},
    ));
  const inference = (w: FakeWorker): ReceivedRequest[] => w.received.filter((r) => r.path.startsWith('/v1/'));
  const refusalLogs = (logs: LogCapture): string[] => logs.lines.map((l) => String(l.msg)).filter((m) => m.includes('cannot parse msgpack bodies'));

  it('sends both phases as msgpack with X-TRTLLM-Msgpack: 1 and Content-Type application/json, and relays the JSON answers', async () => {
    const ctx = await worker('ctx');
    const gen = await worker('gen');
    const r = await start('msgpack', [ctx], [gen]);
    const res = await postJson(`${r.url}/v1/completions`, { ...body, temperature: 0.5, prompt: [5, 4294967296, 3], extra_field: { keep: [true, null] } });
    expect(res.status).toBe(200);
    expect((res.json.choices as Record<string, unknown>[])[0].text).toBe('AAAA');
    expect(res.json.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 4 });

    const [ctxCall] = inference(ctx);
    const [genCall] = inference(gen);
    for (const call of [ctxCall, genCall]) {
      expect(call.encoding).toBe('msgpack');
      expect(call.headers['x-trtllm-msgpack']).toBe('1');
      expect(call.headers['content-type']).toBe('application/json');
    }
    expect(ctxCall.body).toEqual({
      model: 'm', prompt: [5, 4294967296, 3], max_tokens: 4, temperature: 0.5, extra_field: { keep: [true, null] },
      stream: false, stream_options: null,
      disaggregated_params: { request_type: 'context_only', disagg_request_id: expect.any(Number) },
    });
    // Integers stay msgpack integers, as msgspec writes them: an id >= 2^40 is no float64.
    const strict = unpack(ctxCall.raw) as { prompt: unknown[]; disaggregated_params: { disagg_request_id: unknown } };
    expect(typeof strict.disaggregated_params.disagg_request_id).toBe('bigint');
    expect(strict.prompt[1]).toBe(4294967296n);
    const id = (ctxCall.body!.disaggregated_params as { disagg_request_id: number }).disagg_request_id;
    expect(genCall.body).toMatchObject({ prompt: PROMPT_IDS, disaggregated_params: { request_type: 'generation_only', ctx_request_id: 777, disagg_request_id: id } });
    await expectSettled(r);
  });

  it('streams chat from msgpack bodies, the prompt ids of the context answer as a number array', async () => {
    const ctx = await worker('ctx');
    const gen = await worker('gen');
    const r = await start('msgpack', [ctx], [gen]);
    const events = await readSse(await postStream(`${r.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }));
    expect(events.at(-1)).toBe('[DONE]');
    const text = events.slice(0, -1).map((e) => (JSON.parse(e) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('AAAA');
    const [genCall] = inference(gen);
    expect(genCall.encoding).toBe('msgpack');
    expect(genCall.body).toMatchObject({ messages: [{ role: 'user', content: 'hi' }], prompt_token_ids: PROMPT_IDS, stream: true });
  });

  it('sends JSON without the header by default, as every TensorRT-LLM version reads', async () => {
    const ctx = await worker('ctx');
    const gen = await worker('gen');
    const r = await start(undefined, [ctx], [gen]);
    expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(200);
    for (const call of [...inference(ctx), ...inference(gen)]) {
      expect(call.encoding).toBe('json');
      expect(call.headers['x-trtllm-msgpack']).toBeUndefined();
    }
  });

  it('auto: an older worker refuses msgpack once, gets the same request as JSON at once, and JSON from then on, logged once', async () => {
    const ctx = await worker('ctx');
    const gen = await worker('gen', { old: true });
    const logs = new LogCapture();
    const r = await start('auto', [ctx], [gen], {}, logs);
    const answers = await Promise.all(Array.from({ length: 4 }, () => postJson(`${r.url}/v1/completions`, body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.every((a) => (a.json.choices as Record<string, unknown>[])[0].text === 'AAAA')).toBe(true);
    for (let i = 0; i < 3; i++) expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(200);

    const genCalls = inference(gen);
    const refused = genCalls.filter((c) => c.encoding === 'msgpack');
    // The concurrent first requests may each have tried msgpack before the first refusal came back.
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(4);
    expect(genCalls.filter((c) => c.encoding === 'json')).toHaveLength(7);
    expect(genCalls.slice(-3).map((c) => c.encoding)).toEqual(['json', 'json', 'json']);
    expect(inference(ctx).map((c) => c.encoding)).toEqual(Array(7).fill('msgpack'));
    expect(refusalLogs(logs)).toEqual([
      `generation server ${gen.url} cannot parse msgpack bodies (HTTP 400: {"detail":"There was an error parsing the body"}); it gets JSON from now on (http_session.body_encoding: auto)`,
    ]);
    await expectSettled(r);
  });

  it("TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: TensorRT-LLM's generation-only body reaches a msgpack worker as msgpack", async () => {
    const gen = await worker('gen');
    process.env.TRTLLM_DISAGG_BENCHMARK_GEN_ONLY = '1';
    try {
      // The mode is read when the router starts.
      await start('msgpack', [await worker('ctx')], [gen]);
    } finally {
      delete process.env.TRTLLM_DISAGG_BENCHMARK_GEN_ONLY;
    }
    expect((await postJson(`${router!.url}/v1/completions`, { ...body, prompt: [1, 2, 3] })).status).toBe(200);
    const [call] = inference(gen);
    expect(call.encoding).toBe('msgpack');
    expect(call.body).toMatchObject({ prompt: [1, 2, 3], ignore_eos: true, disaggregated_params: { request_type: 'generation_only', first_gen_tokens: [7], ctx_request_id: 1 } });
  });

  describe('signed handoffs (docs/protocol.md "Signed handoff")', () => {
    const KEY = 'a-shared-key';
    const signed = { internal_request_auth_key: KEY, conversation_affinity_header_for_subagents: 'x-parent-session', subagent_affinity_scope: 'both' } as const;
    const idOf = (call: ReceivedRequest): unknown => (call.body!.disaggregated_params as { disagg_request_id: unknown }).disagg_request_id;
    /** Answers 503 to its first inference call, as a worker failing once. */
    const failingOnce = (then: FakeHandler): FakeHandler => {
      let failed = false;
      return (req, res, w) => {
        if (failed || !req.path.startsWith('/v1/')) return then(req, res, w);
        failed = true;
        json(res, 503, { detail: 'busy' });
      };
    };

    it('msgpack: each attempt is signed over what it carries, a retry with a fresh disagg_request_id and signatures over it', async () => {
      const ctxChecks: SignatureCheck[] = [];
      const genChecks: SignatureCheck[] = [];
      const ctx = await worker('ctx');
      ctx.handler = checkingSignatures(KEY, 'context', contextHandler({ promptTokenIds: PROMPT_IDS }), ctxChecks);
      const gen = await worker('gen');
      gen.handler = checkingSignatures(KEY, 'generation', failingOnce(generationHandler({ chunks: 4 })), genChecks);
      const r = await start('msgpack', [ctx], [gen], signed);
      const res = await postJson(`${r.url}/v1/completions`, body, { 'x-parent-session': 'parent-7' });
      expect(res.status).toBe(200);

      const calls = inference(gen);
      expect(calls.map((c) => c.encoding)).toEqual(['msgpack', 'msgpack']);
      expect(genChecks).toEqual([
        { path: '/v1/completions', handoff: 'ok', affinity: 'ok', affinityId: 'parent-7' },
        { path: '/v1/completions', handoff: 'ok', affinity: 'ok', affinityId: 'parent-7' },
      ]);
      expect(ctxChecks).toEqual([{ path: '/v1/completions', handoff: 'none', affinity: 'ok', affinityId: 'parent-7' }]);
      expect(idOf(calls[0])).toBe(idOf(inference(ctx)[0]));
      expect(idOf(calls[1])).not.toBe(idOf(calls[0]));
      // The affinity signature covers the id, so the retry's differs.
      expect(calls[1].headers['x-trtllm-subagent-affinity-auth']).not.toBe(calls[0].headers['x-trtllm-subagent-affinity-auth']);
      await expectSettled(r);
    });

    it('auto: an older worker gets the refused attempt as JSON with the same id and signatures', async () => {
      const genChecks: SignatureCheck[] = [];
      const ctx = await worker('ctx');
      const gen = await worker('gen', { old: true });
      gen.handler = checkingSignatures(KEY, 'generation', generationHandler({ chunks: 4 }), genChecks);
      const r = await start('auto', [ctx], [gen], signed);
      expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(200);

      const [refused, resent] = inference(gen);
      expect([refused.encoding, resent.encoding]).toEqual(['msgpack', 'json']);
      expect(new Unpackr({ int64AsType: 'number', mapsAsObjects: true }).unpack(refused.raw)).toEqual(resent.body);
      expect(resent.headers['x-trtllm-disagg-auth']).toBe(refused.headers['x-trtllm-disagg-auth']);
      expect(genChecks).toEqual([{ path: '/v1/completions', handoff: 'ok', affinity: 'none', affinityId: undefined }]);
      await expectSettled(r);
    });
  });

  it('auto: each worker of a mixed pool gets its own encoding', async () => {
    const [ctxNew, ctxOld] = [await worker('ctx'), await worker('ctx', { old: true })];
    const [genNew, genOld] = [await worker('gen'), await worker('gen', { old: true })];
    const logs = new LogCapture();
    const r = await start('auto', [ctxNew, ctxOld], [genNew, genOld], {}, logs);
    for (let i = 0; i < 8; i++) expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(200);
    for (const w of [ctxNew, genNew]) {
      expect(inference(w).length).toBeGreaterThanOrEqual(2);
      expect(inference(w).every((c) => c.encoding === 'msgpack')).toBe(true);
    }
    for (const w of [ctxOld, genOld]) {
      const calls = inference(w);
      expect(calls.length).toBeGreaterThanOrEqual(3);
      expect(calls[0].encoding).toBe('msgpack');
      expect(calls.slice(1).every((c) => c.encoding === 'json')).toBe(true);
    }
    expect(refusalLogs(logs).map((m) => m.split(' cannot')[0]).sort()).toEqual([`context server ${ctxOld.url}`, `generation server ${genOld.url}`].sort());
    await expectSettled(r);
  });

  it('auto with schedule_style generation_first: both bodies in their server\'s encoding, an older context server falling back', async () => {
    const ctx = await worker('ctx', { old: true });
    const gen = await worker('gen');
    const r = await start('auto', [ctx], [gen], { schedule_style: 'generation_first' });
    for (let i = 0; i < 2; i++) expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(200);
    expect(inference(ctx).map((c) => c.encoding)).toEqual(['msgpack', 'json', 'json']);
    expect(inference(gen).map((c) => c.encoding)).toEqual(['msgpack', 'msgpack']);
    expect(inference(gen)[0].body!.disaggregated_params).toMatchObject({ request_type: 'generation_only', schedule_style: 1 });
    await expectSettled(r);
  });

  it("auto: a worker's own 400 to a msgpack request it read is relayed as it is, not resent", async () => {
    const ctx = await new FakeWorker((_req, res) => {
      const text = JSON.stringify({ object: 'error', message: 'prompt length exceeds max_seq_len', type: 'BadRequestError', param: null, code: 400 });
      res.writeHead(400, { 'content-type': 'application/json' }).end(text);
    }).start();
    workers.push(ctx);
    const gen = await worker('gen');
    const r = await start('auto', [ctx], [gen]);
    const res = await postJson(`${r.url}/v1/completions`, body);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ message: 'prompt length exceeds max_seq_len' });
    expect(inference(ctx).map((c) => c.encoding)).toEqual(['msgpack']);
    expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(400);
    expect(inference(ctx).map((c) => c.encoding)).toEqual(['msgpack', 'msgpack']);
    expect(inference(gen)).toHaveLength(0);
    await expectSettled(r);
  });

  it('msgpack: an older worker is not second-guessed, its refusal reaches the client', async () => {
    const ctx = await worker('ctx', { old: true });
    const gen = await worker('gen');
    const r = await start('msgpack', [ctx], [gen]);
    const res = await postJson(`${r.url}/v1/completions`, body);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ detail: 'There was an error parsing the body' });
    expect(inference(ctx).map((c) => c.encoding)).toEqual(['msgpack']);
    await expectSettled(r);
  });

  it('answers 400 to a body too deeply nested to write as msgpack, and never sends it', async () => {
    const ctx = await worker('ctx');
    const gen = await worker('gen');
    const r = await start('msgpack', [ctx], [gen]);
    const nested = `{"model":"m","prompt":"hi","extra":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const res = await postJson(`${r.url}/v1/completions`, nested);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_body' });
    expect(inference(ctx)).toHaveLength(0);
    expect((await postJson(`${r.url}/v1/completions`, body)).status).toBe(200);
    await expectSettled(r);
  });

  it('keeps control calls (/server_info, /kv_cache_events) JSON', async () => {
    const ctx = await worker('ctx');
    const gen = await worker('gen');
    const r = await start('msgpack', [ctx], [gen], { context_servers: { router: { type: 'kv_cache_aware' } }, generation_servers: { router: { type: 'kv_cache_aware' } } });
    expect((await postJson(`${r.url}/v1/completions`, { ...body, prompt: [1, 2, 3, 4] })).status).toBe(200);
    const control = [...ctx.received, ...gen.received].filter((c) => !c.path.startsWith('/v1/'));
    expect(control.map((c) => c.path)).toEqual(expect.arrayContaining(['/server_info', '/kv_cache_events']));
    for (const call of control) {
      expect(call.encoding).toBe('json');
      expect(call.headers['x-trtllm-msgpack']).toBeUndefined();
    }
    expect(inference(ctx).map((c) => c.encoding)).toEqual(['msgpack']);
  });

  it('runs end to end on simulated workers that decode msgpack, and on ones that refuse it under auto', async () => {
    sim = await startSimCluster({ context: 1, generation: 1, latency: 'zero', tokenizer: 'bytes' });
    router = await startRouter({ health: QUIET_HEALTH, http_session: { body_encoding: 'msgpack' }, context_servers: { urls: sim.contextUrls }, generation_servers: { urls: sim.generationUrls } });
    const res = await postJson(`${router.url}/v1/completions`, { ...body, max_tokens: 5 });
    expect(res.status).toBe(200);
    expect(res.json.usage).toMatchObject({ completion_tokens: 5 });
    for (const w of sim.workers) expect(w.stats.requests.byEncoding).toEqual({ json: 0, msgpack: 1 });
    await router.close();
    await sim.close();

    sim = await startSimCluster({ context: 1, generation: 1, latency: 'zero', tokenizer: 'bytes', msgpack: false });
    router = await startRouter({ health: QUIET_HEALTH, http_session: { body_encoding: 'auto' }, context_servers: { urls: sim.contextUrls }, generation_servers: { urls: sim.generationUrls } });
    for (let i = 0; i < 2; i++) expect((await postJson(`${router.url}/v1/completions`, { ...body, max_tokens: 5 })).status).toBe(200);
    for (const w of sim.workers) {
      expect(w.stats.requests.byEncoding).toEqual({ json: 2, msgpack: 0 });
      expect(w.stats.requests.rejected).toBe(1);
    }
  });
});
