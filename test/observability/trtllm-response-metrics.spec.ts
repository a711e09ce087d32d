import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JSONL_QUEUE_SIZE, PerfMetricsJsonl } from '../../src/observability/perf/perf-metrics-jsonl.service';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { postStream } from '../support/sse';
import { skewWorkerClocks, waitForAlignedClocks } from '../support/worker-clocks';

const ASK = { 'X-TRTLLM-return-metrics': '1' };
const HEADERS = ['server-timing', 'x-trtllm-start-end-time', 'x-trtllm-step-metrics', 'x-trtllm-ctx-chunk-metrics'] as const;
const SKEW_S = 1000;
const FILE_NAME = /^perf_metrics-disagg-.+-\d+-\d{8}T\d{6}Z(\.\d+)?\.jsonl$/;

/** The items of one metrics header, each checked against its format. */
function items(value: string | null | undefined, format: RegExp): string[] {
  expect(typeof value).toBe('string');
  const list = value!.split(', ');
  for (const item of list) expect({ item, ok: format.test(item) }).toEqual({ item, ok: true });
  return list.map((i) => i.split(';')[0]);
}
const DUR = /^[a-z0-9_-]+;dur=\d+\.\d{6}$/;
const TS = /^[a-z]+-(start|end);ts=\d+\.\d{9}$/;

/** The records of the files there now (a file rotated away while reading is skipped). */
function jsonlRecords(dir: string): Record<string, unknown>[] {
  return readdirSync(dir)
    .filter((f) => FILE_NAME.test(f))
    .flatMap((f) => {
      try {
        return readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    })
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('TensorRT-LLM per-response metrics (return_perf_metrics, perf_metrics_output_dir)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'perf-jsonl-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cluster = useRouterCluster({
    // Generation answers one token every 2 ms: a stream comes in several chunks.
    sim: { context: 1, generation: 1, latency: { prefillMsPerToken: 0, decodeMsPerToken: 2, maxBatchSize: 0, overheadMs: 0 } },
    // Clocks far off until the router aligns them: the times below hold only once it has.
    beforeRouter: (cluster) => skewWorkerClocks([...cluster.sim.contextUrls, ...cluster.sim.generationUrls], SKEW_S),
    config: (cluster) => ({
      return_perf_metrics: true,
      perf_metrics_output_dir: dir,
      context_servers: { urls: cluster.sim.contextUrls },
      generation_servers: { urls: cluster.sim.generationUrls },
    }),
  });
  let recordsBefore = 0;
  beforeAll(async () => {
    await waitForAlignedClocks([...cluster.sim.contextUrls, ...cluster.sim.generationUrls], SKEW_S);
    recordsBefore = jsonlRecords(dir).length;
  });

  it('a non-streamed answer carries the four headers, router and worker phases, when the client asks', async () => {
    const res = await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: 'metrics please', max_tokens: 4 }, ASK);
    expect(res.status).toBe(200);
    const timing = items(res.headers.get('server-timing'), DUR);
    expect(timing).toEqual(['disagg_queue', 'disagg_ttft', 'ctx_queue', 'ctx_ttft', 'ctx_e2e', 'gen_queue', 'gen_ttft', 'gen_e2e']);
    const times = items(res.headers.get('x-trtllm-start-end-time'), TS);
    expect(times).toEqual(['disagg-start', 'disagg-end', 'ctx-start', 'ctx-end', 'gen-start', 'gen-end']);
    const steps = items(res.headers.get('x-trtllm-step-metrics'), /^(ctx|gen)-step-\d+-(forward|sample|gpu-forward|gpu-sample);dur=\d+\.\d{6}$/);
    expect(steps.filter((s) => s.startsWith('gen-step-')).length).toBe(4 * 4);
    expect(steps.filter((s) => s.startsWith('ctx-step-')).length).toBe(4);
    const chunks = items(res.headers.get('x-trtllm-ctx-chunk-metrics'), /^ctx-ctx-chunk-0-(forward|sample|gpu-forward|gpu-sample);dur=\d+\.\d{6}$/);
    expect(chunks).toHaveLength(4);
    // The router's times come first and enclose the workers' (one steady clock, aligned: the
    // alignment's error is at most half the shortest exchange's round trip, a few ms on a busy host).
    const ts = Object.fromEntries(res.headers.get('x-trtllm-start-end-time')!.split(', ').map((i) => [i.split(';')[0], Number(i.split('=')[1])]));
    expect(ts['disagg-start']).toBeLessThanOrEqual(ts['disagg-end']);
    expect(ts['disagg-start']).toBeLessThanOrEqual(ts['ctx-start'] + 0.02);
    expect(ts['gen-end']).toBeLessThanOrEqual(ts['disagg-end'] + 0.02);
    expect(res.json.choices).toBeDefined();
  });

  it('a non-streamed answer has none of them without the client header', async () => {
    const res = await postJson(`${cluster.url}/v1/chat/completions`, { model: 'sim-model', messages: [{ role: 'user', content: 'no metrics' }], max_tokens: 3 });
    expect(res.status).toBe(200);
    for (const name of HEADERS) expect(res.headers.get(name)).toBeNull();
    const other = await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: 'not 1', max_tokens: 2 }, { 'X-TRTLLM-return-metrics': '0' });
    for (const name of HEADERS) expect(other.headers.get(name)).toBeNull();
  });

  it('a stream ends with one trtllm.perf_metrics event after [DONE]; the worker event is not relayed', async () => {
    const res = await postStream(`${cluster.url}/v1/chat/completions`, { model: 'sim-model', messages: [{ role: 'user', content: 'stream metrics' }], max_tokens: 5, stream: true }, ASK);
    expect(res.status).toBe(200);
    for (const name of HEADERS) expect(res.headers.get(name)).toBeNull();
    const text = await res.text();
    expect(text.split('event: trtllm.perf_metrics').length - 1).toBe(1);
    const match = /data: \[DONE\]\n\nevent: trtllm\.perf_metrics\ndata: (.+)\n\n$/.exec(text);
    expect(match).not.toBeNull();
    const payload = JSON.parse(match![1]) as Record<string, string>;
    expect(Object.keys(payload)).toEqual(['Server-Timing', 'X-TRTLLM-Start-End-Time', 'X-TRTLLM-Step-Metrics', 'X-TRTLLM-Ctx-Chunk-Metrics']);
    expect(items(payload['Server-Timing'], DUR)).toEqual(['disagg_queue', 'disagg_ttft', 'ctx_queue', 'ctx_ttft', 'ctx_e2e', 'gen_queue', 'gen_ttft', 'gen_e2e']);
    // The generation part came from the worker's own event, renamed.
    expect(items(payload['X-TRTLLM-Step-Metrics'], DUR).filter((s) => s.startsWith('gen-step-')).length).toBe(5 * 4);
    expect(text).not.toContain('server_');
    expect(text).not.toContain('server-');
  });

  it('a stream has no metrics event without the client header (the workers still asked, for the file)', async () => {
    const res = await postStream(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: 'plain stream', max_tokens: 4, stream: true });
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text).not.toContain('trtllm.perf_metrics');
  });

  it('writes one JSONL record per completed request in TensorRT-LLM\'s shape', async () => {
    await waitFor(() => jsonlRecords(dir).length >= recordsBefore + 5, 10_000, 'five records');
    const files = readdirSync(dir).filter((f) => FILE_NAME.test(f));
    expect(files).toHaveLength(1);
    const records = jsonlRecords(dir).slice(recordsBefore);
    expect(records).toHaveLength(5);
    const ctx = cluster.sim.contextUrls[0].replace('http://', '');
    const gen = cluster.sim.generationUrls[0].replace('http://', '');
    for (const r of records) {
      expect(Object.keys(r)).toEqual(['ctx_server', 'gen_server', 'disagg_server_arrival_time', 'disagg_ctx_dispatch_time', 'disagg_server_first_token_time', 'status', 'ctx_perf_metrics', 'gen_perf_metrics', 'disagg_request_id']);
      expect(r).toMatchObject({ ctx_server: ctx, gen_server: gen, status: 'complete' });
      expect(r.disagg_server_arrival_time as number).toBeLessThanOrEqual(r.disagg_ctx_dispatch_time as number);
      expect(r.disagg_ctx_dispatch_time as number).toBeLessThanOrEqual(r.disagg_server_first_token_time as number);
      const ctxPart = r.ctx_perf_metrics as { request_id: unknown; perf_metrics: { timing_metrics: Record<string, number> } };
      expect(ctxPart.request_id).toBe(r.disagg_request_id);
      expect(Object.keys(ctxPart.perf_metrics.timing_metrics)).toEqual(['arrival_time', 'last_token_time', 'first_scheduled_time', 'first_token_time']);
      const genPart = r.gen_perf_metrics as { perf_metrics: { timing_metrics: Record<string, number> } };
      // Two workers' clocks, aligned through /steady_clock_offset: equal within the alignment's error (half a round trip).
      expect(genPart.perf_metrics.timing_metrics.arrival_time).toBeGreaterThanOrEqual(ctxPart.perf_metrics.timing_metrics.arrival_time - 0.02);
      expect(Number.isInteger(r.disagg_request_id)).toBe(true);
    }
  });

  it('drops records past its queue bound instead of growing (and counts them)', async () => {
    const jsonl = cluster.router.app.get(PerfMetricsJsonl);
    const dropped = jsonl.dropped;
    for (let i = 0; i < JSONL_QUEUE_SIZE + 100; i++) jsonl.submit({ filler: i });
    expect(jsonl.dropped - dropped).toBeGreaterThanOrEqual(100);
    await waitFor(() => jsonlRecords(dir).some((r) => r.filler === JSONL_QUEUE_SIZE - 101), 10_000, 'the queued records written');
  });
});

describe('perf_metrics_output_dir rotation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'perf-rotate-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 1, latency: 'zero' },
    config: (cluster) => ({
      perf_metrics_output_dir: dir,
      // About two records per file.
      perf_metrics: { output_file_max_mb: 1.5 / 1024, output_max_files: 3 },
      context_servers: { urls: cluster.sim.contextUrls },
      generation_servers: { urls: cluster.sim.generationUrls },
    }),
  });

  it('starts a new file past the size bound and keeps only the newest files', async () => {
    const jsonl = cluster.router.app.get(PerfMetricsJsonl);
    const first = jsonl.currentFile;
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const res = await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: `rotate ${i}`, max_tokens: 2 });
      expect(res.status).toBe(200);
      await waitFor(() => jsonl.pendingRecords === 0, 10_000, 'the record written');
      seen.add(jsonl.currentFile!);
      expect(readdirSync(dir).length).toBeLessThanOrEqual(3);
    }
    expect(seen.size).toBeGreaterThan(3);
    expect(jsonl.currentFile).not.toBe(first);
    const files = readdirSync(dir);
    expect(files.every((f) => FILE_NAME.test(f))).toBe(true);
    for (const f of files) expect(readFileSync(join(dir, f)).length).toBeLessThanOrEqual(1.5 * 1024 + 2048);
    expect(readdirSync(dir)).not.toContain(first!.split('/').pop());
  });
});
