import type { ApplyOutcome } from './centralized-kv-state';
import type { KvReport } from './kv-reports';
import type { FrameProblem } from './report-frame';

/** Where the report endpoint counts what it received; bound to the metrics service when metrics exist. */
export const KV_REPORT_METRICS = Symbol('KV_REPORT_METRICS');
export interface KvReportMetrics {
  kvReportReceived(kind: KvReport['kind']): void;
  kvReportDropped(reason: FrameProblem | Exclude<ApplyOutcome, 'applied'>): void;
  kvReportWorkersEvicted(count: number): void;
}

/**
 * Router replicas: a report one replica received reaches the others through `publish`, and
 * theirs come back through the handler given to `subscribe` (see README "Running several
 * replicas"). Without a provider the endpoint keeps what it receives to itself.
 */
export const KV_REPORT_RELAY = Symbol('KV_REPORT_RELAY');
export interface KvReportRelay {
  publish(report: KvReport): void;
  subscribe(handler: (report: KvReport) => void): () => void;
}
