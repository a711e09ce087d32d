import { Inject, Injectable, Logger, OnModuleDestroy, Optional } from '@nestjs/common';
import { Pull } from 'zeromq';
import { CentralizedKvState } from './centralized-kv-state';
import type { KvReport } from './kv-reports';
import { KV_REPORT_METRICS, KV_REPORT_RELAY, type KvReportMetrics, type KvReportRelay } from './kv-report-seams';
import { decodeReportFrame, hmacKeyFromEnv } from './report-frame';

/** Largest report accepted (ZMQ drops bigger messages before they reach memory). */
const MAX_REPORT_BYTES = 64 * 1024 * 1024;

/** A bound PULL socket and the state its reports build, shared by the routers using its port. */
export interface KvReportEndpoint {
  /** `tcp://host:port` as bound (the real port when 0 was asked for). */
  readonly address: string;
  readonly port: number;
  readonly state: CentralizedKvState;
  readonly signed: boolean;
  /** Drops the state of workers of `namespace` silent for `staleS`; counts them. */
  evictStale(namespace: string, staleS: number): string[];
  release(): Promise<void>;
}

interface Bound {
  socket: Pull;
  key: Buffer | undefined;
  state: CentralizedKvState;
  address: string;
  port: number;
  users: number;
  loop: Promise<void>;
}

/**
 * The ZMQ PULL endpoints TensorRT-LLM's workers push KV events and load to (see docs/protocol.md
 * "Centralized KV router"), one per port: both pools' routers (namespaces `ctx`, `gen`) and an
 * old and a new policy during a runtime switch share it. The HMAC key is
 * TLLM_CENTRALIZED_ROUTER_HMAC_KEY (base64), read when an endpoint is bound; a frame whose
 * signature does not verify is dropped and counted.
 */
@Injectable()
export class KvReportEndpoints implements OnModuleDestroy {
  private readonly logger = new Logger(KvReportEndpoints.name);
  private readonly byPort = new Map<number, Bound>();
  private readonly unsubscribe?: () => void;

  constructor(
    @Optional() @Inject(KV_REPORT_METRICS) private readonly metrics?: KvReportMetrics,
    @Optional() @Inject(KV_REPORT_RELAY) private readonly relay?: KvReportRelay,
  ) {
    // Another replica's report: every endpoint of this one learns it (namespaces keep pools apart).
    this.unsubscribe = relay?.subscribe((report) => {
      for (const bound of this.byPort.values()) this.apply(bound, report);
    });
  }

  /** The endpoint on `host:port` (port 0: a new one on a free port), bound on first use. */
  async acquire(host: string, port: number): Promise<KvReportEndpoint> {
    let bound = port === 0 ? undefined : this.byPort.get(port);
    if (!bound) bound = await this.bind(host, port);
    bound.users++;
    const b = bound;
    let released = false;
    return {
      address: b.address,
      port: b.port,
      state: b.state,
      signed: b.key !== undefined,
      evictStale: (namespace, staleS) => {
        const evicted = b.state.evictStale(namespace, staleS);
        if (evicted.length) {
          this.metrics?.kvReportWorkersEvicted(evicted.length);
          this.logger.log(`evicted ${evicted.length} stale worker(s) of namespace ${namespace}: ${evicted.join(', ')}`);
        }
        return evicted;
      },
      release: async () => {
        if (released) return;
        released = true;
        if (--b.users === 0) await this.close(b);
      },
    };
  }

  private async bind(host: string, port: number): Promise<Bound> {
    const key = hmacKeyFromEnv(process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY);
    const socket = new Pull({ maxMessageSize: MAX_REPORT_BYTES, linger: 0 });
    await socket.bind(`tcp://${host}:${port}`);
    const address = socket.lastEndpoint ?? `tcp://${host}:${port}`;
    const boundPort = Number(address.slice(address.lastIndexOf(':') + 1));
    const bound: Bound = { socket, key, state: new CentralizedKvState(), address, port: boundPort, users: 0, loop: Promise.resolve() };
    bound.loop = this.receive(bound);
    this.byPort.set(boundPort, bound);
    this.logger.log(`centralized KV router endpoint listening on ${address}${key ? ' (HMAC-signed reports)' : ' (unsigned reports: set TLLM_CENTRALIZED_ROUTER_HMAC_KEY to require a signature)'}`);
    return bound;
  }

  private async receive(bound: Bound): Promise<void> {
    try {
      for await (const [frame] of bound.socket) {
        const decoded = decodeReportFrame(frame, bound.key);
        if (!decoded.ok) {
          this.metrics?.kvReportDropped(decoded.problem);
          this.warnOnce(decoded.problem, `dropped a report on ${bound.address}: ${decoded.detail} (counted in disagg_router_kv_reports_dropped_total; logged once)`);
          continue;
        }
        if (this.apply(bound, decoded.report)) this.relay?.publish(decoded.report);
      }
    } catch (err) {
      // Closing the socket ends the iteration; anything else is worth a line.
      if (!bound.socket.closed) this.logger.error(`the report endpoint ${bound.address} stopped: ${(err as Error).message}`);
    }
  }

  private apply(bound: Bound, report: KvReport): boolean {
    const outcome = bound.state.apply(report);
    if (outcome !== 'applied') {
      this.metrics?.kvReportDropped(outcome);
      if (outcome !== 'out_of_order') this.warnOnce(outcome, `dropped a report of ${report.workerId} on ${bound.address}: ${outcome.replaceAll('_', ' ')} (namespace ${report.namespace})`);
      return false;
    }
    this.metrics?.kvReportReceived(report.kind);
    return true;
  }

  private readonly warned = new Set<string>();

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(message);
  }

  private async close(bound: Bound): Promise<void> {
    if (this.byPort.get(bound.port) === bound) this.byPort.delete(bound.port);
    if (!bound.socket.closed) {
      // close() hands the listener to ZMQ's I/O thread, which lets go of the port later; unbind
      // resolves once it has, so a router started right after (or a restart) can bind it again.
      await bound.socket.unbind(bound.address).catch(() => undefined);
      bound.socket.close();
    }
    await bound.loop;
  }

  async onModuleDestroy(): Promise<void> {
    this.unsubscribe?.();
    await Promise.all([...this.byPort.values()].map((b) => this.close(b)));
  }
}
