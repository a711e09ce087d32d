import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { APP_CONFIG, type ClusterConfig, type AppConfig } from '../config';

export type BusState = 'connecting' | 'connected' | 'degraded';

/** Names on the bus, prefixed with `cluster.name` so router clusters can share one NATS. */
export interface BusNames {
  eventStream: string;
  eventSubject: string;
  routedSubject: string;
  leases: string;
  snapshots: string;
  load: string;
}

interface BusEvents {
  /** Connected (first time or again), stream and buckets in place. */
  up: [];
  /** The connection to NATS is lost; the client keeps reconnecting. */
  down: [];
}

/** How long a load entry of a silent replica lives (its heartbeat is every second). */
export const LOAD_TTL_MS = 5_000;

/** How long shutdown waits for bus calls already under way before it drains the connection. */
const SHUTDOWN_GRACE_MS = 5_000;

/** A bus call refused because the replica is shutting down. */
export class BusClosingError extends Error {
  constructor() {
    super('the bus connection is closing');
  }
}

/**
 * The connection to NATS JetStream that the replica services share. It never blocks startup:
 * a replica without its bus routes on what it knows (degraded) and the client reconnects
 * forever; every (re)connection re-creates the stream and buckets if the server lost them.
 *
 * Shutdown (last, after the leases went back) refuses new calls, waits for the calls under
 * way, and only then drains the connection: the NATS client leaves a heartbeat timer running forever when a
 * KV watch is opened on a connection that closed meanwhile (README, "Running several replicas", Shutdown).
 */
@Injectable()
export class ReplicaBus extends EventEmitter<BusEvents> implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ReplicaBus');
  readonly cluster: ClusterConfig;
  readonly replicaId: string;
  /** This process (a replica restarted under the same id is another instance). */
  readonly instanceId = randomUUID();
  readonly names: BusNames;
  state: BusState = 'connecting';
  /** Epoch ms of the last state change. */
  since = Date.now();
  /** Outages seen since start. */
  outages = 0;
  /** Bus work that failed while connected and was tried again (see retried()). */
  retries = 0;
  nc?: NatsConnection;
  js?: JetStreamClient;
  jsm?: JetStreamManager;
  leases?: KV;
  snapshots?: KV;
  load?: KV;
  private closing = false;
  private readonly underWay = new Set<Promise<unknown>>();

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super();
    this.setMaxListeners(0);
    if (!config.cluster) throw new Error('ReplicaBus needs the cluster config section');
    this.cluster = config.cluster;
    this.replicaId = config.cluster.replica_id ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '_')}-${process.pid}`;
    const n = config.cluster.name;
    this.names = {
      eventStream: `${n}_kv_events`,
      eventSubject: `${n}.kv.events`,
      routedSubject: `${n}.routed`,
      leases: `${n}_leases`,
      snapshots: `${n}_snapshots`,
      load: `${n}_load`,
    };
  }

  get connected(): boolean {
    return this.state === 'connected' && !this.closing;
  }

  onModuleInit(): void {
    void this.run();
  }

  private async run(): Promise<void> {
    const server = this.cluster.bus.replace(/^nats:\/\//i, '');
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: server,
        name: `disagg-router ${this.replicaId}`,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        waitOnFirstConnect: true,
        // A dead server is noticed within seconds even when no socket error says so.
        pingInterval: 2_000,
        maxPingOut: 2,
      });
    } catch (err) {
      if (!this.closing) this.logger.error(`cannot connect to the bus ${this.cluster.bus}: ${(err as Error).message}`);
      return;
    }
    if (this.closing) {
      await nc.close();
      return;
    }
    this.nc = nc;
    this.logger.log(`replica ${this.replicaId} connected to ${this.cluster.bus}`);
    await this.becomeUp();
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') this.becomeDown();
      else if (status.type === 'reconnect') await this.becomeUp();
    }
  }

  private async becomeUp(): Promise<void> {
    const nc = this.nc;
    if (!nc || this.closing) return;
    try {
      await this.ensure(nc);
    } catch (err) {
      // Reconnected but JetStream is not answering yet: the next reconnect or retry fixes it.
      this.logger.warn(`bus connected but its streams are not ready: ${(err as Error).message}`);
      setTimeout(() => void this.becomeUp(), 500).unref();
      return;
    }
    if (this.state !== 'connected') {
      if (this.state === 'degraded') this.logger.log(`bus ${this.cluster.bus} is back: resynchronising`);
      this.setState('connected');
      this.emit('up');
    }
  }

  private becomeDown(): void {
    if (this.state !== 'connected' || this.closing) return;
    this.outages++;
    this.logger.warn(`bus ${this.cluster.bus} lost: routing on the local view, polling this replica's share of the workers`);
    this.setState('degraded');
    this.emit('down');
  }

  private setState(state: BusState): void {
    this.state = state;
    this.since = Date.now();
  }

  private async ensure(nc: NatsConnection): Promise<void> {
    const jsm = await jetstreamManager(nc, { timeout: 2_000 });
    const maxAge = Math.round(this.cluster.stream_max_age_s * 1e9);
    try {
      await jsm.streams.info(this.names.eventStream);
    } catch {
      await jsm.streams.add({ name: this.names.eventStream, subjects: [this.names.eventSubject], max_age: maxAge });
    }
    this.jsm = jsm;
    this.js = jetstream(nc, { timeout: 2_000 });
    const kvm = new Kvm(this.js);
    this.leases = await kvm.create(this.names.leases, { history: 1, ttl: this.cluster.lease_ttl_s * 1000 });
    this.snapshots = await kvm.create(this.names.snapshots, { history: 1 });
    this.load = await kvm.create(this.names.load, { history: 1, ttl: LOAD_TTL_MS });
  }

  /**
   * Runs `work` against the bus, so shutdown waits for it before closing the connection.
   * Rejects with BusClosingError, without running it, once shutdown began.
   */
  call<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new BusClosingError());
    const running = work();
    this.underWay.add(running);
    const done = (): void => void this.underWay.delete(running);
    running.then(done, done);
    return running;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.callsUnderWay();
    const nc = this.nc;
    this.nc = undefined;
    if (nc && !nc.isClosed()) await nc.drain().catch(() => nc.close());
  }

  private async callsUnderWay(): Promise<void> {
    if (!this.underWay.size) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_GRACE_MS)));
    await Promise.race([Promise.allSettled([...this.underWay]), grace]);
    clearTimeout(timer);
  }

  /**
   * Bus work that must get done while the bus is up (a resynchronisation, a watch) failed
   * and is tried again after `pauseMs`: counted, and logged as a warning for the first
   * failure in a row only (a stalled bus would otherwise log every pause).
   */
  retried(what: string, err: unknown, streak: number, pauseMs: number): void {
    this.retries++;
    const line = `${what} failed: ${err instanceof Error ? err.message : String(err)}; trying again in ${pauseMs} ms`;
    if (streak === 0) this.logger.warn(line);
    else this.logger.debug(line);
  }

  /** The work that retried() reported succeeded after `failures` (at least one) failures in a row. */
  recovered(what: string, failures: number): void {
    this.logger.log(`${what} succeeded after ${failures} failed attempt${failures === 1 ? '' : 's'}`);
  }

  /** Runs a bus call; false (never a throw) when the bus is down or the call fails. */
  async attempt(what: string, call: () => Promise<unknown>): Promise<boolean> {
    if (!this.connected) return false;
    try {
      await this.call(call);
      return true;
    } catch (err) {
      if (this.connected) this.logger.debug(`${what} failed: ${(err as Error).message}`);
      return false;
    }
  }
}
