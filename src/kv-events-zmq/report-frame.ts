import { createHmac, timingSafeEqual } from 'node:crypto';
import { EVENT_REPORT_CLASS, KvReportError, LOAD_REPORT_CLASS, REPORT_CLASSES, REPORT_MODULE, reportFromPickle, type KvReport, type WorkerLoadReport } from './kv-reports';
import { PickleError, readPickle } from './pickle-reader';
import { PythonObject, writePickle } from './pickle-writer';

/** Bytes of the HMAC-SHA256 digest that ends a signed frame. */
export const HMAC_BYTES = 32;

export type FrameProblem = 'bad_hmac' | 'malformed';

export type DecodedFrame = { ok: true; report: KvReport } | { ok: false; problem: FrameProblem; detail: string };

/**
 * One ZMQ message of the report stream (see docs/protocol.md "Centralized KV router"): the
 * pickled report, followed, when a key is shared, by the raw HMAC-SHA256 of the pickle under
 * that key. Without a key the whole message is the pickle.
 */
export function decodeReportFrame(frame: Uint8Array, hmacKey: Buffer | undefined): DecodedFrame {
  let data = frame;
  if (hmacKey) {
    if (frame.length <= HMAC_BYTES) return { ok: false, problem: 'bad_hmac', detail: 'the frame is shorter than its signature' };
    data = frame.subarray(0, frame.length - HMAC_BYTES);
    const expected = createHmac('sha256', hmacKey).update(data).digest();
    if (!timingSafeEqual(expected, frame.subarray(frame.length - HMAC_BYTES))) return { ok: false, problem: 'bad_hmac', detail: 'HMAC verification failed' };
  }
  try {
    return { ok: true, report: reportFromPickle(readPickle(data, { allowedClasses: REPORT_CLASSES })) };
  } catch (err) {
    if (err instanceof PickleError || err instanceof KvReportError) return { ok: false, problem: 'malformed', detail: err.message };
    throw err;
  }
}

/** What a worker's event report carries: its events as the `/kv_cache_events` objects. */
export interface EventReportFields {
  workerId: string;
  namespace: string;
  seq: number;
  events: readonly unknown[];
  isFullSnapshot?: boolean;
  sendTs?: number;
}

export type LoadReportFields = Omit<WorkerLoadReport, 'kind'>;

/** The frame a worker pushes for an event report: its pickle, signed when a key is given. */
export function encodeEventReportFrame(r: EventReportFields, hmacKey: Buffer | undefined): Buffer {
  return signed(new PythonObject(REPORT_MODULE, EVENT_REPORT_CLASS, {
    worker_id: r.workerId, namespace: r.namespace, seq: r.seq,
    events: r.events, is_full_snapshot: r.isFullSnapshot ?? false, send_ts: r.sendTs ?? 0,
  }), hmacKey);
}

/** The frame a worker pushes for a load report. */
export function encodeLoadReportFrame(r: LoadReportFields, hmacKey: Buffer | undefined): Buffer {
  return signed(new PythonObject(REPORT_MODULE, LOAD_REPORT_CLASS, {
    worker_id: r.workerId, namespace: r.namespace, seq: r.seq,
    num_active_requests: r.numActiveRequests, num_queued_requests: r.numQueuedRequests,
    max_batch_size: r.maxBatchSize, num_active_tokens: r.numActiveTokens,
  }), hmacKey);
}

function signed(report: PythonObject, hmacKey: Buffer | undefined): Buffer {
  const pickle = writePickle(report);
  return hmacKey ? Buffer.concat([pickle, createHmac('sha256', hmacKey).update(pickle).digest()]) : pickle;
}

/** TensorRT-LLM's TLLM_CENTRALIZED_ROUTER_HMAC_KEY: the key, base64; empty or unset: none. */
export function hmacKeyFromEnv(value: string | undefined): Buffer | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const key = Buffer.from(value.trim(), 'base64');
  if (key.length === 0 || key.toString('base64').replace(/=+$/, '') !== value.trim().replace(/=+$/, '')) {
    throw new KvReportError('TLLM_CENTRALIZED_ROUTER_HMAC_KEY is not valid base64');
  }
  return key;
}
