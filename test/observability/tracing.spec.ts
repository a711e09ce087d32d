import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestTracing, tracingOptions } from '../../src/observability/tracing';
import { useFakeCluster, useRouterCluster } from '../support/router-cluster';
import { contextHandler, generationHandler, json } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

function only(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  expect({ name, count: found.length }).toEqual({ name, count: 1 });
  return found[0];
}

describe('tracing options', () => {
  it('is off by default and on with the config endpoint or the OTEL_* endpoint variables', () => {
    expect(tracingOptions({}, {})).toBeUndefined();
    expect(tracingOptions({ otlp_config: { otlp_traces_endpoint: 'http://c:4318/v1/traces' } }, {})).toEqual({ url: 'http://c:4318/v1/traces' });
    expect(tracingOptions({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({ url: undefined });
    expect(tracingOptions({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({ url: undefined });
    expect(tracingOptions({ otlp_config: { otlp_traces_endpoint: 'http://c:4318/v1/traces' } }, { OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingOptions({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });
});

describe('tracing to an OTLP/HTTP receiver', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await new OtlpReceiver().start();
  });
  const cluster = useFakeCluster(() => ({ otlp_config: { otlp_traces_endpoint: `${receiver.url}/v1/traces` } }));
  // After the cluster's: the router flushes its spans while it closes.
  afterAll(() => receiver?.close());

  afterEach(() => {
    receiver.spans.length = 0;
  });

  async function spansOf(traceId: string, count: number): Promise<ReceivedSpan[]> {
    await cluster.router.app.get(RequestTracing).flush();
    await waitFor(() => receiver.spans.filter((s) => s.traceId === traceId).length >= count, 10_000, `${count} spans`);
    return receiver.spans.filter((s) => s.traceId === traceId);
  }

  it("continues the client's trace: a request span with routing and call spans, each call's context sent to its worker", async () => {
    const r = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 }, {
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      'x-request-id': 'traced-1',
    });
    expect(r.status).toBe(200);
    const spans = await spansOf(CLIENT_TRACE, 5);
    expect(receiver.contentTypes[0]).toContain('application/json');

    const root = only(spans, 'POST /v1/completions');
    expect(root.parentSpanId).toBe(CLIENT_SPAN);
    expect(root.service).toBe('disagg-router');
    expect(root.attributes).toMatchObject({ 'http.response.status_code': 200, 'disagg.mode': 'disagg', 'disagg.retries': 0, 'disagg.request_id': 'traced-1', 'disagg.context_server': cluster.ctx.url, 'disagg.generation_server': cluster.gen.url });
    const routeCtx = only(spans, 'route context');
    const routeGen = only(spans, 'route generation');
    const ctxCall = only(spans, 'context call');
    const genCall = only(spans, 'generation call');
    for (const child of [routeCtx, routeGen, ctxCall, genCall]) expect(child.parentSpanId).toBe(root.spanId);
    expect(routeCtx.attributes).toMatchObject({ 'disagg.server': cluster.ctx.url, 'disagg.policy': 'round_robin' });
    expect(ctxCall.attributes).toMatchObject({ 'disagg.server': cluster.ctx.url, 'disagg.policy': 'round_robin', 'disagg.retries': 0 });
    expect(genCall.attributes).toMatchObject({ 'disagg.server': cluster.gen.url, 'disagg.role': 'generation' });

    const ctxParent = TRACEPARENT.exec(String(cluster.ctx.received.at(-1)!.headers.traceparent));
    const genParent = TRACEPARENT.exec(String(cluster.gen.received.at(-1)!.headers.traceparent));
    expect(ctxParent?.slice(1, 3)).toEqual([CLIENT_TRACE, ctxCall.spanId]);
    expect(genParent?.slice(1, 3)).toEqual([CLIENT_TRACE, genCall.spanId]);
  });

  it('starts a new trace for a client without traceparent, streamed answers included', async () => {
    const res = await fetch(`${cluster.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const sent = TRACEPARENT.exec(String(cluster.gen.received.at(-1)!.headers.traceparent));
    expect(sent).not.toBeNull();
    const spans = await spansOf(sent![1], 5);
    const root = only(spans, 'POST /v1/chat/completions');
    expect(root.parentSpanId).toBeUndefined();
    expect(root.attributes['disagg.stream']).toBe(true);
    expect(only(spans, 'generation call').spanId).toBe(sent![2]);
  });
});

describe('tracing of a retried call', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await new OtlpReceiver().start();
  });
  const cluster = useRouterCluster({
    workers: { ctx: contextHandler(), gen: generationHandler(), failing: (_req, res) => json(res, 500, { error: 'boom' }) },
    config: ({ ctx, gen, failing }) => ({
      max_retries: 1,
      otlp_config: { otlp_traces_endpoint: `${receiver.url}/v1/traces` },
      context_servers: { urls: [failing.url, ctx.url], router: { type: 'round_robin' } },
      generation_servers: { urls: [gen.url] },
    }),
  });
  afterAll(() => receiver?.close());

  it('records the failed attempt as an error span and the retry as attributes', async () => {
    // Round robin over two servers: one of two requests tries the failing one first.
    const traces = ['a', 'b'].map((c) => c.repeat(32));
    for (const t of traces) {
      const r = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'x' }, { traceparent: `00-${t}-${CLIENT_SPAN}-01` });
      expect(r.status).toBe(200);
    }
    await cluster.router.app.get(RequestTracing).flush();
    await waitFor(() => receiver.spans.filter((s) => s.name.startsWith('POST')).length === 2, 10_000, 'two request spans');
    const retried = receiver.spans.find((s) => s.name.startsWith('POST') && s.attributes['disagg.retries'] === 1)!;
    expect(retried).toBeDefined();
    const calls = receiver.spans.filter((s) => s.traceId === retried.traceId && s.name === 'context call');
    expect(calls.map((c) => [c.attributes['disagg.server'], c.attributes['disagg.retries'], c.status?.code ?? 0])).toEqual([
      [cluster.failing.url, 0, 2],
      [cluster.ctx.url, 1, 0],
    ]);
    expect(cluster.failing.received.at(-1)!.headers.traceparent).toContain(calls[0].spanId);
    expect(cluster.ctx.received.at(-1)!.headers.traceparent).toContain(calls[1].spanId);
  });
});

describe('tracing off (the default)', () => {
  const cluster = useFakeCluster();

  it('sends no traceparent of its own and starts no tracer', async () => {
    expect(cluster.router.app.get(RequestTracing).enabled).toBe(false);
    const r = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' }, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
    expect(r.status).toBe(200);
    expect(cluster.ctx.received.at(-1)!.headers.traceparent).toBeUndefined();
    expect(cluster.gen.received.at(-1)!.headers.traceparent).toBeUndefined();
  });
});
