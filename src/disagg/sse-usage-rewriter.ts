import { StringDecoder } from 'node:string_decoder';
import type { KindProtocol } from './kind-protocols';
import type { ContextUsage } from './usage';

const EVENT_END = '\n\n';
const USAGE_KEY = '"usage"';
const USAGE_BYTES = Buffer.from(USAGE_KEY);
/** An unterminated event larger than this is passed on as is rather than buffered forever. */
const MAX_CARRY = 1 << 20;
/** How much of a stream's previous text an end mark split across chunks may start in. */
const TAIL_CHARS = 64;

/**
 * Passes an upstream SSE stream through, rewriting `usage` in the events that carry one, and
 * watches for the kind's end mark (`[DONE]`, or a Responses terminal event). Chunks that hold
 * only whole events without usage (nearly all of them) are forwarded untouched; only an event
 * split across chunks is buffered until its end.
 */
export class SseUsageRewriter {
  private carry = '';
  private readonly decoder = new StringDecoder('utf8');
  sawEnd = false;

  constructor(
    private readonly ctx: ContextUsage | undefined,
    private readonly protocol: KindProtocol,
  ) {}

  push(chunk: Buffer): string | Buffer {
    // Whole events without usage (nearly every chunk) go out as the same bytes: no decoding,
    // no re-encoding on the client socket.
    if (this.carry === '' && (!this.ctx || (endsWithEventEnd(chunk) && chunk.indexOf(USAGE_BYTES) < 0))) {
      this.noteEnd(this.protocol.endScanAll ? chunk.toString('utf8') : chunk.toString('latin1', Math.max(0, chunk.length - 32)));
      return chunk;
    }
    this.tail = '';
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
    if (this.protocol.streamEnded(complete)) this.sawEnd = true;
    return this.ctx && complete.includes(USAGE_KEY) ? this.rewrite(complete) : complete;
  }

  /** What is left at the end of the upstream stream (an unterminated event). */
  flush(): string {
    const rest = this.carry + this.decoder.end();
    this.carry = '';
    if (this.protocol.streamEnded(rest)) this.sawEnd = true;
    return rest;
  }

  private tail = '';

  private noteEnd(text: string): void {
    // The end mark may span chunks: the previous chunk's last characters are looked at with it.
    const window = this.tail + text;
    if (this.protocol.streamEnded(window)) this.sawEnd = true;
    this.tail = window.slice(-TAIL_CHARS);
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
