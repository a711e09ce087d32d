import { Injectable, Logger } from '@nestjs/common';
import { HttpApiError } from '../common';
import { RequestEvents } from '../request-events';
import type { Flow } from './request-flow';
import { SseUsageRewriter } from './sse-usage-rewriter';
import { parseJsonObject } from './trtllm-protocol';
import { UpstreamDispatch, type Dispatched } from './upstream-dispatch';
import { ClientGoneError } from '../common';
import { classifyTransportError } from '../http-session';
import type { ContextUsage } from './usage';
import { protocolOf } from './kind-protocols';
import { workerErrorBody } from './worker-error';

/**
 * The answer's way to the client: the generation worker's answer (whole or streamed as SSE),
 * with the prompt usage the context worker reported, or the context answer itself when the
 * request finished there. A stream that breaks after its head ends with an error event.
 */
@Injectable()
export class StreamRelay {
  private readonly logger = new Logger(StreamRelay.name);

  constructor(
    private readonly dispatch: UpstreamDispatch,
    private readonly events: RequestEvents,
  ) {}

  /** The generation worker's answer to the client; the status the client got. */
  async relay(flow: Flow, call: Dispatched, ctxUsage: ContextUsage | undefined): Promise<number> {
    const { res, router, route } = call;
    if (res.statusCode !== 200 || !flow.done.stream) {
      let text = await this.dispatch.readAnswer(flow, 'generation', call);
      if (res.statusCode !== 200) {
        this.dispatch.finish(flow, router, true);
        flow.channel.sendJson(res.statusCode, workerErrorBody('generation', res.statusCode, text));
        return res.statusCode;
      }
      const json = parseJsonObject(text);
      if (!json) {
        this.dispatch.finish(flow, router, false);
        this.dispatch.badResponse(flow, 'generation', route, 'an answer that is not JSON');
      }
      if (ctxUsage && protocolOf(flow.kind).rewriteUsage(json, ctxUsage)) text = JSON.stringify(json);
      this.dispatch.finish(flow, router, true);
      const perf = flow.perf;
      if (perf) perf.fromHeaders('gen', route.server.url, res.headers);
      flow.channel.sendJson(200, text, perf?.finishHeaders(flow.started, flow.timings));
      return 200;
    }
    const contentType = String(res.headers['content-type'] ?? '');
    if (!contentType.includes('text/event-stream')) {
      // dump() drains (or drops) the body without an unhandled 'error' event, which destroy() would emit.
      res.body.dump().catch(() => undefined);
      this.dispatch.finish(flow, router, false);
      this.dispatch.badResponse(flow, 'generation', route, `a streaming answer of type '${contentType || 'none'}'`);
    }
    return this.relayStream(flow, call, ctxUsage);
  }

  /** An early-finished request: the context answer is the whole answer. */
  async answerFromContext(flow: Flow, json: Record<string, unknown>): Promise<void> {
    if (!flow.done.stream) {
      flow.channel.sendJson(200, JSON.stringify(json));
      return;
    }
    flow.channel.startStream(true);
    await flow.channel.write(protocolOf(flow.kind).replayStream(json));
    flow.channel.end();
  }

  private async relayStream(flow: Flow, call: Dispatched, ctxUsage: ContextUsage | undefined): Promise<number> {
    const { res, router, route } = call;
    const channel = flow.channel;
    const rewriter = new SseUsageRewriter(ctxUsage, protocolOf(flow.kind));
    const done = flow.done;
    // The worker's own metrics event is never relayed (docs/protocol.md "Per-response metrics").
    const stripper = flow.perf?.streamStripper();
    // The upstream's first event usually came with its head: it is buffered already.
    channel.startStream(res.body.readableLength > 0);
    try {
      for await (const chunk of res.body) {
        done.streamChunks++;
        const out = rewriter.push(stripper ? stripper.push(chunk as Buffer) : (chunk as Buffer));
        if (out.length) {
          if (flow.deadline.waitingForFirstEvent) flow.deadline.firstEvent();
          const drained = channel.write(out);
          if (drained) await drained;
        }
      }
      const held = stripper?.end();
      if (held?.length) {
        const out = rewriter.push(held);
        if (out.length) await channel.write(out);
      }
      const rest = rewriter.flush();
      if (rest) await channel.write(rest);
    } catch (err) {
      this.dispatch.finish(flow, router, false);
      if (channel.abort.aborted) throw new ClientGoneError();
      const kind = classifyTransportError(err);
      this.events.emit('upstreamFailure', { requestId: channel.requestId, role: 'generation', server: route.server, kind, detail: (err as Error).message });
      flow.done.errorKind = kind;
      await this.streamError(flow, rewriter, kind === 'timeout' ? 504 : 502,
        kind === 'timeout'
          ? `generation server ${route.server.url} went silent mid-stream`
          : `generation server ${route.server.url} broke the stream (${kind})`);
      return kind === 'timeout' ? 504 : 502;
    }
    if (!rewriter.watch.ended) {
      this.dispatch.finish(flow, router, false);
      this.events.emit('upstreamFailure', { requestId: channel.requestId, role: 'generation', server: route.server, kind: 'bad_response', detail: 'stream ended without its end event' });
      flow.done.errorKind = 'bad_response';
      await this.streamError(flow, rewriter, 502, `generation server ${route.server.url} ended the stream without its end event`);
      return 502;
    }
    this.dispatch.finish(flow, router, true);
    const perf = flow.perf;
    if (perf) {
      perf.fromStreamEvent(route.server.url);
      const event = perf.finishEvent(flow.started, flow.timings);
      if (event) await channel.write(event);
    }
    channel.end();
    return 200;
  }

  /** A final error event in the kind's stream format once the stream has started, then the end. */
  private async streamError(flow: Flow, rewriter: SseUsageRewriter, status: number, message: string): Promise<void> {
    const err = new HttpApiError(status, message);
    this.logger.warn(`[${flow.channel.requestId}] ${message}`);
    if (!flow.channel.abort.aborted) {
      await flow.channel.write(rewriter.watch.errorEvents(err))?.catch(() => undefined);
    }
    flow.channel.end();
  }
}
