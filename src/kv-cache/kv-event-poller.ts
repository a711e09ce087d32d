import { Logger } from '@nestjs/common';
import { HttpSessionClosedError } from '../http-session';
import { parseKvEventsFast } from './fast-kv-events';
import type { ServerState } from '../servers';
import { applyKvEvents, type AppliedEvents } from './kv-event-applier';

const logger = new Logger('KvEventPoller');

interface PollState {
  running?: Promise<void>;
  /** Another poll was asked for while one was running: run once more after it. */
  again: boolean;
}

/** Per worker, shared by every router (a runtime policy switch may overlap two). */
const polls = new WeakMap<ServerState, PollState>();

export interface PollOutcome {
  ok: boolean;
  applied?: AppliedEvents;
  error?: string;
}

/**
 * Fetches a worker's KV cache events (a destructive read) and applies them. Polls of one
 * worker never overlap: two answers applied out of order could re-add a block the later one
 * removed. A poll asked for while one runs is coalesced into a single follow-up. Never
 * throws: a failed poll only leaves the table as it was.
 */
export function pollKvEvents(server: ServerState, timeoutMs: number): Promise<void> {
  let state = polls.get(server);
  if (!state) {
    state = { again: false };
    polls.set(server, state);
  }
  if (state.running) {
    state.again = true;
    return state.running;
  }
  const s = state;
  s.running = (async () => {
    try {
      do {
        s.again = false;
        await pollOnce(server, timeoutMs);
      } while (s.again);
    } finally {
      s.running = undefined;
    }
  })();
  return s.running;
}

/** One fetch-and-apply; resolves with what happened (for tests and the periodic poller). */
export async function pollOnce(server: ServerState, timeoutMs: number): Promise<PollOutcome> {
  try {
    const text = await server.fetchKvEventsText(timeoutMs);
    if (!text.trim()) return { ok: true, applied: { stored: 0, removed: 0, ignored: 0 } };
    return { ok: true, applied: applyKvEvents(server, parseKvEventsFast(text)) };
  } catch (err) {
    // Outside the session's lifetime there is nothing to poll with; not a worker fault.
    if (!(err instanceof HttpSessionClosedError)) {
      logger.warn(`failed to poll KV cache events from ${server.url}: ${(err as Error).message}`);
    }
    return { ok: false, error: (err as Error).message };
  }
}

/** Whether a poll of this worker is in flight (tests wait for quiet). */
export function isPolling(server: ServerState): boolean {
  return polls.get(server)?.running !== undefined;
}
