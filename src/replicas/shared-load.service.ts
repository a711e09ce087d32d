import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { KvWatchEntry } from '@nats-io/kv';
import { normalizeServerUrl } from '../config';
import { ServerRegistry } from '../servers';
import { LOAD_TTL_MS, ReplicaBus } from './replica-bus.service';
import { WatchSlot } from './watch-slot';

/** One replica's in-flight counts per worker URL: [requests, prompt tokens]. */
interface LoadReport {
  replica: string;
  /** Sender's epoch ms when it took the counts. */
  at: number;
  servers: Record<string, [number, number]>;
}

interface Peer {
  report: LoadReport;
  receivedAt: number;
}

const HEARTBEAT_MS = 1_000;
const AGE_SAMPLES = 512;

/**
 * The cluster-wide load picture. Each replica puts its in-flight counts per worker into the
 * load bucket when they change (at most every `load_interval_ms`) and every second anyway;
 * it watches the others' entries and adds them to each worker as `peerRequests` /
 * `peerTokens`, which the load-aware scores read. A peer silent for LOAD_TTL_MS (dead, or
 * the bus is down) no longer counts. Staleness: the interval plus the bus delivery time,
 * measured on receipt (`age`).
 */
@Injectable()
export class SharedLoad implements OnModuleInit, OnModuleDestroy {
  private readonly peers = new Map<string, Peer>();
  /** The replicas alive when the bus was lost: the membership the outage share is computed on. */
  private frozen?: string[];
  private timer?: NodeJS.Timeout;
  private lastSent = '';
  private lastSentAt = 0;
  private publishing = false;
  /** Recent report ages on receipt, ms (ring buffer). */
  private readonly ages: number[] = [];
  private ageIndex = 0;
  /** Reports received from peers. */
  received = 0;

  private readonly watching: WatchSlot;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
  ) {
    this.watching = new WatchSlot(bus, 'the load watch');
  }

  onModuleInit(): void {
    this.bus.on('up', () => {
      this.frozen = undefined;
      void this.watch();
    });
    this.bus.on('down', () => (this.frozen = this.liveReplicas()));
    this.timer = setInterval(() => this.tick(), this.bus.cluster.load_interval_ms);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    this.watching.stop();
  }

  /** Replicas seen alive: this one and every peer heard from within LOAD_TTL_MS (bus down: as when it was lost). */
  liveReplicas(): string[] {
    if (this.frozen) return this.frozen;
    return [this.bus.replicaId, ...this.peers.keys()].sort();
  }

  peerView(): { replica: string; last_report_ms_ago: number; active_requests: number }[] {
    const now = Date.now();
    return [...this.peers.values()].map((p) => ({
      replica: p.report.replica,
      last_report_ms_ago: now - p.receivedAt,
      active_requests: Object.values(p.report.servers).reduce((n, [r]) => n + r, 0),
    }));
  }

  /** Ages of recent reports on receipt (ms): how stale the shared load is. */
  ageStats(): { samples: number; p50_ms: number; p99_ms: number; max_ms: number } {
    const sorted = [...this.ages].sort((a, b) => a - b);
    const at = (q: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : 0);
    return { samples: sorted.length, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: sorted.length ? sorted[sorted.length - 1] : 0 };
  }

  private tick(): void {
    this.sweep();
    if (!this.bus.connected || this.publishing || !this.bus.load) return;
    const servers: Record<string, [number, number]> = {};
    for (const s of this.registry.list()) {
      if (s.activeRequests || s.activeTokens) servers[s.url] = [s.activeRequests, s.activeTokens];
    }
    const body = JSON.stringify(servers);
    const now = Date.now();
    if (body === this.lastSent && now - this.lastSentAt < HEARTBEAT_MS) return;
    const report: LoadReport = { replica: this.bus.replicaId, at: now, servers };
    const kv = this.bus.load;
    this.publishing = true;
    void this.bus
      .attempt('load report', () => kv.put(this.bus.replicaId, JSON.stringify(report)))
      .then((ok) => {
        if (ok) {
          this.lastSent = body;
          this.lastSentAt = now;
        }
      })
      .finally(() => (this.publishing = false));
  }

  private async watch(): Promise<void> {
    const kv = this.bus.load;
    if (kv) await this.watching.follow(() => kv.watch({ key: '>' }), (entry) => this.onEntry(entry));
  }

  private onEntry(entry: KvWatchEntry): void {
    if (entry.key === this.bus.replicaId) return;
    if (entry.operation !== 'PUT') {
      this.peers.delete(entry.key);
      this.recompute();
      return;
    }
    let report: LoadReport;
    try {
      report = entry.json<LoadReport>();
    } catch {
      return;
    }
    if (typeof report?.at !== 'number' || typeof report.servers !== 'object' || report.replica !== entry.key) return;
    const now = Date.now();
    // An old entry replayed when the watch starts says nothing about staleness.
    if (entry.isUpdate) this.recordAge(now - report.at);
    if (now - report.at >= LOAD_TTL_MS) return;
    this.peers.set(entry.key, { report, receivedAt: now });
    this.received++;
    this.recompute();
  }

  private recordAge(ms: number): void {
    if (this.ages.length < AGE_SAMPLES) this.ages.push(ms);
    else this.ages[this.ageIndex] = ms;
    this.ageIndex = (this.ageIndex + 1) % AGE_SAMPLES;
  }

  private sweep(): void {
    const now = Date.now();
    let changed = false;
    for (const [id, peer] of this.peers) {
      if (now - peer.receivedAt < LOAD_TTL_MS) continue;
      this.peers.delete(id);
      changed = true;
    }
    if (changed) this.recompute();
  }

  /** Peer counts onto the workers, by URL (the same worker has the same URL on every replica). */
  private recompute(): void {
    const sums = new Map<string, [number, number]>();
    for (const { report } of this.peers.values()) {
      for (const [url, counts] of Object.entries(report.servers)) {
        if (!Array.isArray(counts)) continue;
        const key = safeUrl(url);
        if (!key) continue;
        const sum = sums.get(key) ?? [0, 0];
        sum[0] += Number(counts[0]) || 0;
        sum[1] += Number(counts[1]) || 0;
        sums.set(key, sum);
      }
    }
    for (const s of this.registry.list()) {
      const sum = sums.get(s.url);
      s.peerRequests = sum ? sum[0] : 0;
      s.peerTokens = sum ? sum[1] : 0;
    }
  }
}

function safeUrl(url: string): string | undefined {
  try {
    return normalizeServerUrl(url);
  } catch {
    return undefined;
  }
}
