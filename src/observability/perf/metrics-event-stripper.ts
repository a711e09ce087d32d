import { SSE_METRICS_EVENT } from './trtllm-metrics-headers';

const MARKER = Buffer.from(`event: ${SSE_METRICS_EVENT}\n`);
const EVENT_END = Buffer.from('\n\n');
const EMPTY = Buffer.alloc(0);
/** An unterminated event larger than this is passed on rather than held (the relay's own bound). */
const MAX_PENDING = 1 << 20;
/** A worker's metrics event larger than this is dropped. */
const MAX_EVENT = 256 * 1024;

/**
 * Takes a worker's `trtllm.perf_metrics` event out of the stream it relays: everything from the
 * event's first line on is kept here (it follows `[DONE]`), the rest passes on whole events at
 * a time so the marker is never split across two chunks unseen.
 */
export class MetricsEventStripper {
  private pending: Buffer = EMPTY;
  private event: Buffer[] | undefined;
  private eventSize = 0;

  /** The part of `chunk` to relay (possibly empty). */
  push(chunk: Buffer): Buffer {
    if (this.event) {
      this.eventSize += chunk.length;
      if (this.eventSize <= MAX_EVENT) this.event.push(chunk);
      return EMPTY;
    }
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const at = buf.indexOf(MARKER);
    if (at >= 0) {
      this.pending = EMPTY;
      this.event = [buf.subarray(at)];
      this.eventSize = buf.length - at;
      return buf.subarray(0, at);
    }
    const end = buf.lastIndexOf(EVENT_END);
    if (end < 0) {
      if (buf.length > MAX_PENDING) {
        this.pending = EMPTY;
        return buf;
      }
      this.pending = buf;
      return EMPTY;
    }
    const cut = end + EVENT_END.length;
    this.pending = cut < buf.length ? buf.subarray(cut) : EMPTY;
    return cut < buf.length ? buf.subarray(0, cut) : buf;
  }

  /** What is left to relay once the upstream stream ended. */
  end(): Buffer {
    const rest = this.pending;
    this.pending = EMPTY;
    return rest;
  }

  /** The JSON text of the worker's event (its `data:` line), if one came whole. */
  eventData(): string | undefined {
    if (!this.event || this.eventSize > MAX_EVENT) return undefined;
    const text = Buffer.concat(this.event).toString('utf8');
    const at = text.indexOf('\ndata: ');
    if (at < 0) return undefined;
    const start = at + '\ndata: '.length;
    const stop = text.indexOf('\n', start);
    return text.slice(start, stop < 0 ? undefined : stop);
  }
}
