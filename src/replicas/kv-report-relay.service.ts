import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from '@nats-io/nats-core';
import type { KvReport, KvReportRelay, ReportedKvEvent } from '../kv-events-zmq';
import { decodeBlocks, encodeBlocks, type EncodedBlocks } from './block-codec';
import { ReplicaBus } from './replica-bus.service';

type WireEvent = Omit<ReportedKvEvent, 'hashes'> & { blocks: EncodedBlocks };
type WireReport = ({ kind: 'events'; events: WireEvent[] } & Omit<Extract<KvReport, { kind: 'events' }>, 'events' | 'kind'>) | Extract<KvReport, { kind: 'load' }>;

interface RelayMessage {
  replica: string;
  report: WireReport;
}

/**
 * The centralized KV router across replicas: a worker pushes its reports to one address, so the
 * replica that received a report publishes it (core NATS, `<name>.kv.reports`) and every other
 * replica applies it too; each report's `seq` keeps one applied once and in order. A missed
 * message costs prefix hits until the worker's next events; load is re-sent every half second.
 */
@Injectable()
export class KvReportRelayService implements KvReportRelay, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('KvReportRelay');
  private readonly handlers = new Set<(report: KvReport) => void>();
  private sub?: Subscription;
  sent = 0;
  received = 0;

  constructor(private readonly bus: ReplicaBus) {}

  private get subject(): string {
    return `${this.bus.cluster.name}.kv.reports`;
  }

  onModuleInit(): void {
    this.bus.on('up', () => this.listen());
  }

  publish(report: KvReport): void {
    const nc = this.bus.nc;
    if (!this.bus.connected || !nc) return;
    const wire: WireReport = report.kind === 'load'
      ? report
      : { ...report, events: report.events.map(({ hashes, ...rest }) => ({ ...rest, blocks: encodeBlocks(hashes) })) };
    try {
      nc.publish(this.subject, JSON.stringify({ replica: this.bus.replicaId, report: wire } satisfies RelayMessage));
      this.sent++;
    } catch (err) {
      this.logger.debug(`KV report not relayed: ${(err as Error).message}`);
    }
  }

  subscribe(handler: (report: KvReport) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  private listen(): void {
    const nc = this.bus.nc;
    // Core subscriptions survive reconnects: one is enough.
    if (this.sub || !nc) return;
    this.sub = nc.subscribe(this.subject, {
      callback: (err, m) => {
        if (err) return;
        try {
          const report = this.fromWire(m.json<RelayMessage>());
          if (!report) return;
          this.received++;
          for (const h of this.handlers) h(report);
        } catch {
          /* not ours or malformed: ignored */
        }
      },
    });
  }

  private fromWire(msg: RelayMessage): KvReport | undefined {
    if (!msg || msg.replica === this.bus.replicaId || typeof msg.report !== 'object' || msg.report === null) return undefined;
    const r = msg.report;
    if (typeof r.workerId !== 'string' || typeof r.namespace !== 'string' || typeof r.seq !== 'number') return undefined;
    if (r.kind === 'load') return r;
    if (r.kind !== 'events' || !Array.isArray(r.events)) return undefined;
    return { ...r, events: r.events.map(({ blocks, ...rest }) => ({ ...rest, hashes: decodeBlocks(blocks) })) };
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
  }
}
