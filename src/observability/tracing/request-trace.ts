import { defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { ServerRole } from '../../config';
import type { RequestKind, RouteResult } from '../../routing';
import { INFERENCE_PATH } from '../../common';
import type { RequestDoneEvent } from '../../request-events';


/**
 * The spans of one client request: the request span (a child of the client's traceparent,
 * if any), one routing span per pick and one span per upstream call, whose context goes to
 * the worker as its traceparent.
 */
export class RequestTrace {
  private readonly root: Span;
  private readonly rootContext: Context;
  private readonly routing: Partial<Record<ServerRole, Span>> = {};
  private readonly calls: Partial<Record<ServerRole, Span>> = {};
  private readonly picks: Partial<Record<ServerRole, { policy: string; matched?: number; prompt?: number }>> = {};

  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: W3CTraceContextPropagator,
    parent: Context,
    kind: RequestKind,
    requestId: string,
    startTime: number,
  ) {
    this.root = tracer.startSpan(`POST ${INFERENCE_PATH[kind]}`, {
      kind: SpanKind.SERVER,
      startTime,
      attributes: { 'http.request.method': 'POST', 'url.path': INFERENCE_PATH[kind], 'disagg.request_id': requestId },
    }, parent);
    this.rootContext = trace.setSpan(parent, this.root);
  }

  routingStarted(role: ServerRole): void {
    this.routing[role]?.end();
    this.routing[role] = this.tracer.startSpan(`route ${role}`, { attributes: { 'disagg.role': role } }, this.rootContext);
  }

  routed(role: ServerRole, policy: string, route: RouteResult): void {
    const span = this.routing[role];
    const { matchedTokens, promptTokens } = route.info;
    this.picks[role] = { policy, matched: matchedTokens, prompt: promptTokens };
    if (!span) return;
    span.setAttributes({ 'disagg.server': route.server.url, 'disagg.policy': policy });
    if (matchedTokens !== undefined) span.setAttribute('disagg.matched_tokens', matchedTokens);
    if (promptTokens !== undefined) span.setAttribute('disagg.prompt_tokens', promptTokens);
    span.end();
    this.routing[role] = undefined;
  }

  /** A call to a worker begins (attempt 0, or a retry): its span's context goes in `headers`. */
  callStarted(role: ServerRole, server: string, attempt: number, headers: Record<string, string>): void {
    const previous = this.calls[role];
    if (previous) {
      previous.setStatus({ code: SpanStatusCode.ERROR, message: 'retried on another server' });
      previous.end();
    }
    // The context phase is over once the generation call starts.
    if (role === 'generation') this.endCall('context');
    const pick = this.picks[role];
    const span = this.tracer.startSpan(`${role} call`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'disagg.role': role,
        'disagg.server': server,
        'server.address': server,
        'disagg.retries': attempt,
        ...(pick ? { 'disagg.policy': pick.policy } : {}),
        ...(pick?.matched !== undefined ? { 'disagg.matched_tokens': pick.matched } : {}),
      },
    }, this.rootContext);
    this.calls[role] = span;
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
  }

  end(done: RequestDoneEvent): void {
    const failed = done.status >= 500;
    for (const role of ['context', 'generation'] as const) {
      this.routing[role]?.end();
      this.endCall(role, failed && role === 'generation' ? done.errorKind : undefined);
    }
    this.root.setAttributes({
      'http.response.status_code': done.status,
      'disagg.mode': done.mode,
      'disagg.retries': done.retries,
      'disagg.stream': done.stream,
      ...(done.contextServer ? { 'disagg.context_server': done.contextServer } : {}),
      ...(done.generationServer ? { 'disagg.generation_server': done.generationServer } : {}),
      ...(done.errorKind ? { 'error.type': done.errorKind } : {}),
    });
    if (failed) this.root.setStatus({ code: SpanStatusCode.ERROR, message: done.errorKind });
    this.root.end();
  }

  private endCall(role: ServerRole, error?: string): void {
    const span = this.calls[role];
    if (!span) return;
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end();
    this.calls[role] = undefined;
  }
}
