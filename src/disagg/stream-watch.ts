import type { HttpApiError } from '../common';
import { RESPONSES_STREAM_END } from './responses-events';

/**
 * What the relay keeps of a generation stream while passing it through: whether its end mark
 * went by, and what a stream that breaks after its head ends with (see docs/protocol.md
 * "Streaming" and "Responses").
 */
export interface StreamWatch {
  /** Whether see() needs each chunk's whole text, or only its last bytes. */
  readonly wholeText: boolean;
  readonly ended: boolean;
  /** The relayed text, in order: whole chunks, or (without wholeText) their last bytes. */
  see(text: string): void;
  /** The last events of a stream that broke after its head. */
  errorEvents(err: HttpApiError): string;
}

/** An end mark split across chunks starts within this many characters of the previous one. */
const TAIL_CHARS = 64;
const DONE_EVENT = 'data: [DONE]';

/** Completions and chat: the stream ends with `data: [DONE]`; a break with an error chunk. */
export class DoneWatch implements StreamWatch {
  readonly wholeText = false;
  ended = false;
  private tail = '';

  see(text: string): void {
    const window = this.tail + text;
    if (window.includes(DONE_EVENT)) this.ended = true;
    this.tail = window.slice(-TAIL_CHARS);
  }

  errorEvents(err: HttpApiError): string {
    return `data: ${JSON.stringify(err.body)}\n\n`;
  }
}

/** The opening event is read for its snapshot up to this size; a larger one is not kept. */
const MAX_OPENING = 1 << 20;

/**
 * A Responses stream: ends with its terminal event. A break ends it as a worker ends one of
 * its own, an `error` event, then `response.failed` built from the snapshot the opening
 * `response.created` carried, numbered after the events relayed.
 */
export class ResponsesWatch implements StreamWatch {
  readonly wholeText = true;
  ended = false;
  private tail = '';
  private events = 0;
  private opening: string | undefined = '';
  private snapshot: Record<string, unknown> | undefined;

  see(text: string): void {
    const window = this.tail + text;
    if (RESPONSES_STREAM_END.test(window)) this.ended = true;
    // Events end with a blank line; one split across chunks is counted through the tail.
    for (let at = window.indexOf('\n\n', Math.max(0, this.tail.length - 1)); at >= 0; at = window.indexOf('\n\n', at + 2)) this.events++;
    this.tail = window.slice(-TAIL_CHARS);
    if (this.opening !== undefined) this.readOpening(text);
  }

  errorEvents(err: HttpApiError): string {
    const e = err.body.error;
    const code = e.code ?? e.type;
    const frame = (type: string, fields: Record<string, unknown>): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.events++, ...fields })}\n\n`;
    const error = frame('error', { code, message: e.message, param: e.param ?? null });
    if (!this.snapshot) return error;
    return error + frame('response.failed', { response: { ...this.snapshot, status: 'failed', error: { code, message: e.message } } });
  }

  private readOpening(text: string): void {
    const opening = this.opening + text;
    const end = opening.indexOf('\n\n');
    if (end < 0) {
      this.opening = opening.length < MAX_OPENING ? opening : undefined;
      return;
    }
    this.opening = undefined;
    const dataAt = opening.lastIndexOf('data:', end);
    try {
      const event = JSON.parse(opening.slice(dataAt + 5, end)) as Record<string, unknown>;
      const response = event.response;
      if (event.type === 'response.created' && typeof response === 'object' && response !== null) this.snapshot = response as Record<string, unknown>;
    } catch {
      // Not an opening this watch can read: a break then ends with the error event alone.
    }
  }
}
