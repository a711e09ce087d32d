import { StringDecoder } from 'node:string_decoder';
import type { KindProtocol } from './kind-protocols';
import type { StreamWatch } from './stream-watch';
import type { ContextUsage } from './usage';

const EVENT_END = '\n\n';
const USAGE_KEY = '"usage"';
const USAGE_BYTES = Buffer.from(USAGE_KEY);
/** An unterminated event larger than this is passed on as is rather than buffered forever. */
const MAX_CARRY = 1 << 20;

/**
 * Passes an upstream SSE stream through, rewriting `usage` in the events that carry one, and
 * watches for the kind's end mark (`[DONE]`, or a Responses terminal event). Chunks that hold
 * only whole events without usage (nearly all of them) are forwarded untouched; only an event
 * split across chunks is buffered until its end.
 */
export class SseUsageRewriter {
  private carry = '';
  private readonly decoder = new StringDecoder('utf8');
  /** The stream's end mark, and how a break ends it. */
  readonly watch: StreamWatch;

  constructor(
    private readonly ctx: ContextUsage | undefined,
    private readonly protocol: KindProtocol,
  ) {
    this.watch = protocol.watchStream();
  }

  push(chunk: Buffer): string | Buffer {
    // Whole events without usage (nearly every chunk) go out as the same bytes: no decoding,
    // no re-encoding on the client socket.
    if (this.carry === '' && (!this.ctx || (endsWithEventEnd(chunk) && chunk.indexOf(USAGE_BYTES) < 0))) {
      // [DONE] is the last event: for it, only the stream's tail is looked at.
      this.watch.see(this.watch.wholeText ? chunk.toString('utf8') : chunk.toString('latin1', Math.max(0, chunk.length - 32)));
      return chunk;
    }
    // The decoder keeps a character split across chunks whole (SSE events start with ASCII).
    const text = this.carry + this.decoder.write(chunk);
    const end = text.lastIndexOf(EVENT_END);
    if (end < 0 && text.length < MAX_CARRY) {
      this.carry = text;
      return '';
    }
    const cut = end < 0 ? text.length : end + EVENT_END.length;
    const complete = text.slice(0, cut);
    this.carry = text.slice(cut);
    this.watch.see(complete);
    return this.ctx && complete.includes(USAGE_KEY) ? this.rewrite(complete) : complete;
  }

  /** What is left at the end of the upstream stream (an unterminated event). */
  flush(): string {
    const rest = this.carry + this.decoder.end();
    this.carry = '';
    this.watch.see(rest);
    return rest;
  }

  private rewrite(events: string): string {
    return events
      .split(EVENT_END)
      .map((event) => {
        if (!event.includes(USAGE_KEY)) return event;
        // `data: {...}`, or after an `event: <type>` line.
        const at = event.startsWith('data: {') ? 0 : event.indexOf('\ndata: {') + 1;
        if (at <= 0 && !event.startsWith('data: {')) return event;
        try {
          const payload = JSON.parse(event.slice(at + 6)) as Record<string, unknown>;
          if (!this.protocol.rewriteUsage(payload, this.ctx!)) return event;
          return `${event.slice(0, at)}data: ${JSON.stringify(payload)}`;
        } catch {
          return event;
        }
      })
      .join(EVENT_END);
  }
}

function endsWithEventEnd(chunk: Buffer): boolean {
  const n = chunk.length;
  return n >= 2 && chunk[n - 1] === 0x0a && chunk[n - 2] === 0x0a;
}
