import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeWorker, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { buildDist, listeningUrl, startBinary, type RouterBinary } from '../support/router-binary';
import { tempDir } from '../support/temp-dirs';
import { checkingSignatures, expectedSignatures, type SignatureCheck } from '../support/trtllm-signatures';
import { hostPort, writeConfig } from './compat-support';

const KEY = 'replace-with-a-random-shared-key';
const PARENT_HEADER = 'X-Dynamo-Parent-Session-ID';

/** A context worker's answer carrying both handoff fields TensorRT-LLM signs. */
const contextAnswer: FakeHandler = (req, res) => {
  // Not a clock-aligning worker (/steady_clock_offset): as TensorRT-LLM releases without it.
  if (!req.path.startsWith('/v1/')) return json(res, 404, { detail: 'Not Found' });
  const body = req.body ?? {};
  const dp = body.disaggregated_params as Record<string, unknown>;
  json(res, 200, {
    id: 'cmpl-ctx',
    object: 'text_completion',
    model: body.model,
    choices: [{
      index: 0,
      text: 'A',
      finish_reason: 'length',
      disaggregated_params: {
        request_type: 'context_only', ctx_request_id: 777, first_gen_tokens: [42], draft_tokens: null,
        encoded_opaque_state: 'b3BhcXVl', ctx_info_endpoint: 'tcp://127.0.0.1:5555', disagg_request_id: dp.disagg_request_id,
      },
    }],
    prompt_token_ids: body.prompt,
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  });
};

function header(worker: FakeWorker, i: number, name: string): string | undefined {
  const v = worker.received.filter((r) => r.path.startsWith('/v1/'))[i]?.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function inference(worker: FakeWorker): Array<Record<string, unknown>> {
  return worker.received.filter((r) => r.path.startsWith('/v1/')).map((r) => r.body ?? {});
}

// The router's command started as a child process, as launch scripts for today's trtllm-serve start it.
describe('the newest TensorRT-LLM: signed handoffs, flags and switches, through the command line', () => {
  const procs: RouterBinary[] = [];
  const workers: FakeWorker[] = [];

  beforeAll(async () => {
    await buildDist();
  }, 180_000);
  afterEach(async () => {
    for (const p of procs.splice(0)) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    for (const w of workers.splice(0)) await w.close();
  });

  async function worker(handler: FakeHandler): Promise<FakeWorker> {
    const w = await new FakeWorker(handler).start();
    workers.push(w);
    return w;
  }

  async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ proc: RouterBinary; url: string }> {
    const proc = startBinary(args, { ...process.env, ...env });
    procs.push(proc);
    const url = await listeningUrl(proc);
    await waitFor(async () => (await fetch(`${url}/health`)).status === 200, 60_000, '/health 200');
    return { proc, url };
  }

  it('signs every KV handoff and sub-agent hint as a worker holding the key checks them (Python hmac), reports its bound address, and serves /cluster_info with server_lists and routing_key_configs', async () => {
    const ctxChecks: SignatureCheck[] = [];
    const genChecks: SignatureCheck[] = [];
    const ctx = await worker(checkingSignatures(KEY, 'context', contextAnswer, ctxChecks));
    const gen = await worker(checkingSignatures(KEY, 'generation', generationHandler(), genChecks));
    const file = writeConfig('disagg_config_newest.yaml', { key: KEY, ctx0: hostPort(ctx), gen0: hostPort(gen) });
    const addrFile = join(tempDir('report-addr-'), 'sub', 'router.addr');
    const { proc, url } = await serve(
      ['disaggregated', '--config', file, '-s', 'context_first', '--no-telemetry', '--report_addr', addrFile, '-t', '60', '-r', '120', '-l', 'info'],
      { TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK: '16' },
    );

    // port 0 in the config: the file names the port actually bound, as host:port and a newline.
    expect(readFileSync(addrFile, 'utf8')).toBe(`${new URL(url).host}\n`);
    expect(new URL(url).port).not.toBe('0');
    expect(proc.out()).toContain('--no-telemetry: accepted; this router collects and sends no telemetry');

    const plain = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 });
    expect(plain.status).toBe(200);
    expect(genChecks[0]).toEqual({ path: '/v1/completions', handoff: 'ok', affinity: 'none', affinityId: undefined });
    expect(ctxChecks[0]).toMatchObject({ handoff: 'none', affinity: 'none' });
    // The exact value, against the generator's for the body the worker received.
    const expected = await expectedSignatures(KEY, 'generation', inference(gen)[0]);
    expect(header(gen, 0, 'x-trtllm-disagg-auth')).toBe(expected['x-trtllm-disagg-auth']);
    expect(expected['x-trtllm-disagg-auth']).toMatch(/^sha256=[0-9a-f]{64}$/);

    // A sub-agent: its parent's id goes to the context pool (scope context), signed for that call.
    const sub = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 }, { 'x-session-id': 'child-a', [PARENT_HEADER]: ' parent-1 ' });
    expect(sub.status).toBe(200);
    expect(ctxChecks[1]).toMatchObject({ affinity: 'ok', affinityId: 'parent-1' });
    expect(header(ctx, 1, 'x-trtllm-subagent-affinity-id')).toBe('parent-1');
    expect(header(ctx, 1, 'x-trtllm-subagent-affinity-auth')).toBe(
      (await expectedSignatures(KEY, 'context', inference(ctx)[1], 'parent-1'))['x-trtllm-subagent-affinity-auth'],
    );
    expect(genChecks[1]).toMatchObject({ handoff: 'ok', affinity: 'none' });
    expect(header(gen, 1, 'x-trtllm-subagent-affinity-id')).toBeUndefined();

    // TensorRT-LLM's fields beside ours.
    const info = (await (await fetch(`${url}/cluster_info`)).json()) as Record<string, unknown>;
    expect(info.server_lists).toEqual({ context: [hostPort(ctx)], generation: [hostPort(gen)] });
    expect(info.routing_key_configs).toEqual({ generation: { tokens_per_block: 16, kv_cache_hash_algo: 'v1_block_key' } });
    expect(info.is_ready).toBe(true);
    expect(info.generation_servers).toEqual([expect.objectContaining({ url: gen.url, state: 'ready' })]);

    // Both calls went as msgpack (Content-Type still JSON), and the signatures above held over them.
    for (const w of [ctx, gen]) {
      const calls = w.received.filter((r) => r.path.startsWith('/v1/'));
      expect(calls.map((r) => [r.encoding, r.headers['content-type']])).toEqual(calls.map(() => ['msgpack', 'application/json']));
    }
    // return_perf_metrics: a client that asks gets TensorRT-LLM's metrics headers, and the workers were asked.
    const measured = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 }, { 'X-TRTLLM-return-metrics': '1' });
    expect(measured.status).toBe(200);
    expect(measured.headers.get('server-timing')).toMatch(/disagg_queue;dur=[\d.]+/);
    expect(measured.headers.get('x-trtllm-start-end-time')).toMatch(/disagg-start;ts=[\d.]+, disagg-end;ts=[\d.]+/);
    expect(header(gen, 2, 'x-trtllm-return-metrics')).toBe('1');
    expect(genChecks[2]).toMatchObject({ handoff: 'ok' });
  }, 150_000);

  it('signs a generation_first generation call, which names the context endpoint from /server_info (-s generation_first)', async () => {
    const genChecks: SignatureCheck[] = [];
    const ctx = await worker(contextAnswer);
    ctx.serverInfo = { disaggregated_params: { ctx_info_endpoint: ['tcp://127.0.0.1:6000', 'tcp://127.0.0.1:6001'] } };
    const gen = await worker(checkingSignatures(KEY, 'generation', generationHandler(), genChecks));
    const file = writeConfig('disagg_config_newest.yaml', { key: KEY, ctx0: hostPort(ctx), gen0: hostPort(gen) });
    const { url } = await serve(['disaggregated', '-c', file, '-s', 'GENERATION_FIRST', '-l', 'info']);
    const res = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(inference(gen)[0].disaggregated_params).toMatchObject({ schedule_style: 1, ctx_info_endpoint: 'tcp://127.0.0.1:6000' });
    expect(genChecks).toEqual([expect.objectContaining({ handoff: 'ok' })]);
  }, 150_000);

  it('without a key: handoffs go unsigned with the warning of the newest TensorRT-LLM, and a worker holding a key refuses them', async () => {
    const genChecks: SignatureCheck[] = [];
    const ctx = await worker(contextAnswer);
    const gen = await worker(checkingSignatures(KEY, 'generation', generationHandler(), genChecks));
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    const { proc, url } = await serve(['disaggregated', '--config_file', file, '-l', 'info']);
    expect(proc.out()).toContain('--config_file is deprecated, use --config instead.');
    const res = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 });
    expect(res.status).toBe(400);
    expect(genChecks).toEqual([expect.objectContaining({ handoff: 'missing' })]);
    expect(header(gen, 0, 'x-trtllm-disagg-auth')).toBeUndefined();
    expect(proc.out()).toMatch(/KV handoffs go unsigned: internal_request_auth_key is not set/);
  }, 150_000);

  it('refuses to start with an empty internal_request_auth_key (exit 2, naming the key)', async () => {
    const empty = writeConfig('disagg_config_newest.yaml', { key: '', ctx0: '127.0.0.1:1', gen0: '127.0.0.1:2' });
    const proc = startBinary(['disaggregated', '-c', empty]);
    expect(await proc.exited).toBe(2);
    expect(proc.out()).toContain('internal_request_auth_key: must be a non-empty string');
  }, 150_000);

  it('TRTLLM_DISAGG_NO_RETRY=1: a failed worker call is not retried', async () => {
    const ctx = await worker(contextAnswer);
    const gen = await worker((_req, res) => void res.socket?.destroy());
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    const { proc, url } = await serve(['disaggregated', '-c', file, '-l', 'info'], { TRTLLM_DISAGG_NO_RETRY: '1' });
    expect(proc.out()).toContain('TRTLLM_DISAGG_NO_RETRY=1: worker calls are not retried');
    const res = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 });
    expect(res.status).toBe(502);
    expect((res.json.error as { message: string }).message).toMatch(/failed after 1 attempt/);
    expect(inference(gen)).toHaveLength(1);
  }, 150_000);

  it('TLLM_LOG_ROUTE_TIMING=1: each pool logs its pick times every 500 picks', async () => {
    const ctx = await worker(contextAnswer);
    const gen = await worker(generationHandler());
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    const { proc, url } = await serve(['disaggregated', '-c', file, '-l', 'info'], { TLLM_LOG_ROUTE_TIMING: '1' });
    expect(proc.out()).toContain('TLLM_LOG_ROUTE_TIMING=1: each router logs its pick times every 500 picks');
    const lines = (): string[] => proc.out().split('\n').filter((l) => l.includes('[route_timing]'));
    // 499 picks per pool: no line yet; the 500th writes one per pool.
    const send = async (n: number): Promise<void> => {
      for (let sent = 0; sent < n; sent += 10) {
        const batch = await Promise.all(Array.from({ length: Math.min(10, n - sent) }, () => postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 })));
        for (const res of batch) expect(res.status).toBe(200);
      }
    };
    await send(499);
    expect(lines()).toEqual([]);
    await send(1);
    await waitFor(() => lines().length === 2, 10_000, 'a line per pool');
    for (const role of ['context', 'generation']) {
      const line = lines().find((l) => l.includes(`round_robin (${role})`));
      expect(line).toMatch(/\[route_timing\] round_robin \((context|generation)\) n=500 get_next_server_ms: mean=\d+\.\d\d p50=\d+\.\d\d p90=\d+\.\d\d p99=\d+\.\d\d max=\d+\.\d\d/);
    }
  }, 150_000);

  it('TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: serves without the context pool, sending TensorRT-LLM\'s generation-only body', async () => {
    const gen = await worker(generationHandler());
    const file = writeConfig('disagg_config.yaml', { ctx0: '127.0.0.1:1', gen0: hostPort(gen) });
    // The context server does not exist: /health is 200 all the same.
    const { url } = await serve(['disaggregated', '-c', file, '-t', '30', '-l', 'info'], { TRTLLM_DISAGG_BENCHMARK_GEN_ONLY: '1' });
    const res = await postJson(`${url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 });
    expect(res.status).toBe(200);
    const [body] = inference(gen);
    expect(body.disaggregated_params).toEqual({ request_type: 'generation_only', first_gen_tokens: [7], ctx_request_id: 1, encoded_opaque_state: null, draft_tokens: null });
    expect(body.ignore_eos).toBe(true);
    expect(body.prompt).toEqual([1, 2, 3]);
  }, 150_000);
});
