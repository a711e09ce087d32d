import { KvEventParseError, toBlockHash, type KvBlockHash } from '../kv-cache';
import type { PickledObject } from './pickle-reader';

/**
 * The two reports TensorRT-LLM's workers push to the centralized KV router, as the router
 * reads them (see docs/protocol.md "Centralized KV router"). `worker_id` is the instance id of
 * `/server_info.worker_id`, with `:rank<N>` appended by workers that report per data-parallel
 * rank; `seq` numbers each stream (events, load) of a worker separately.
 */
export const REPORT_MODULE = 'tensorrt_llm.serve.kv_cache_router.messages';
export const EVENT_REPORT_CLASS = 'KvCacheEventReport';
export const LOAD_REPORT_CLASS = 'WorkerLoadReport';
export const REPORT_CLASSES: ReadonlySet<string> = new Set([`${REPORT_MODULE}.${EVENT_REPORT_CLASS}`, `${REPORT_MODULE}.${LOAD_REPORT_CLASS}`]);

/** One KV event as a report carries it: the `/kv_cache_events` shape, hashes normalized. */
export interface ReportedKvEvent {
  type: string;
  /** `stored`: the blocks' hashes; `removed`: the hashes dropped. */
  hashes: KvBlockHash[];
  layerGroupId?: number;
}

export interface KvEventReport {
  kind: 'events';
  workerId: string;
  namespace: string;
  seq: number;
  events: ReportedKvEvent[];
  isFullSnapshot: boolean;
  sendTs: number;
}

export interface WorkerLoadReport {
  kind: 'load';
  workerId: string;
  namespace: string;
  seq: number;
  numActiveRequests: number;
  numQueuedRequests: number;
  maxBatchSize: number;
  numActiveTokens: number;
}

export type KvReport = KvEventReport | WorkerLoadReport;

export class KvReportError extends Error {
  override readonly name = 'KvReportError';
}

/** A report from the unpickled object; fields with the wrong type are a KvReportError. */
export function reportFromPickle(obj: unknown): KvReport {
  if (typeof obj !== 'object' || obj === null || !('__class__' in obj)) throw new KvReportError('the frame is not a report object');
  const o = obj as PickledObject;
  const workerId = str(o, 'worker_id');
  const namespace = str(o, 'namespace');
  const seq = num(o, 'seq');
  if (o.__class__ === EVENT_REPORT_CLASS) {
    const events = o.events ?? [];
    if (!Array.isArray(events)) throw new KvReportError('events is not a list');
    return {
      kind: 'events', workerId, namespace, seq,
      events: events.map(reportedEvent),
      isFullSnapshot: o.is_full_snapshot === true,
      sendTs: typeof o.send_ts === 'number' ? o.send_ts : 0,
    };
  }
  return {
    kind: 'load', workerId, namespace, seq,
    numActiveRequests: num(o, 'num_active_requests', 0),
    numQueuedRequests: num(o, 'num_queued_requests', 0),
    maxBatchSize: num(o, 'max_batch_size', 1),
    numActiveTokens: num(o, 'num_active_tokens', 0),
  };
}

/** An event as TensorRT-LLM's router reads it: `data` or the event itself, its type and hashes. */
function reportedEvent(raw: unknown): ReportedKvEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new KvReportError('an event is not a dict');
  const event = raw as Record<string, unknown>;
  const data = (typeof event.data === 'object' && event.data !== null ? event.data : event) as Record<string, unknown>;
  const type = typeof data.type === 'string' ? data.type : '';
  const layer = event.layer_group_id;
  const out: ReportedKvEvent = { type, hashes: [] };
  if (typeof layer === 'number') out.layerGroupId = layer;
  try {
    if (type === 'stored' && Array.isArray(data.blocks)) {
      out.hashes = data.blocks.map((b: unknown) => toBlockHash((b as Record<string, unknown> | null)?.block_hash));
    } else if (type === 'removed' && Array.isArray(data.block_hashes)) {
      out.hashes = data.block_hashes.map((h: unknown) => toBlockHash(h));
    }
  } catch (err) {
    if (err instanceof KvEventParseError) throw new KvReportError(err.message);
    throw err;
  }
  return out;
}

function str(o: PickledObject, key: string): string {
  const v = o[key];
  if (typeof v !== 'string' || !v) throw new KvReportError(`${key} is not a non-empty string`);
  return v;
}

function num(o: PickledObject, key: string, dflt?: number): number {
  const v = o[key];
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  throw new KvReportError(`${key} is not a number`);
}
