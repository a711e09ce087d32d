import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { normalizeServerUrl } from '../config';
import { KvEventApplier, parseKvEventsFast, type KvCacheEvent, type KvEventPublisher } from '../kv-cache';
import { publishAcked } from './acked-publish';
import { eventMessages } from './event-messages';
import { KvSnapshots } from './kv-snapshots.service';
import { ReplicaBus } from './replica-bus.service';
import { partBytesFor } from './snapshot-parts';
import { WatchSlot } from './watch-slot';
import { WorkerPositions } from './worker-positions';

/** Header of the messages of a drain whose events start a new epoch (the worker restarted). */
const EPOCH_START = 'epoch-start';

/** Messages of one drain sent and not yet acknowledged by the stream, at most. */
const MAX_UNACKED = 4;

/**
 * The KV cache events of every worker on one JetStream stream. The replica that polled a
 * worker publishes what it drained (worker URL and restart epoch in headers, the events as
 * JSON, in several messages when one would exceed the bus's max_payload, serialised a slice at a
 * time); every replica reads the stream in order and applies the others'
 * messages through the KV room's applier (which skips event ids already applied). A message
 * with a newer epoch than this replica knows restarts the worker's event ids first. The
 * stream sequence tells where a replica is, so it resumes after an outage or starts after a
 * snapshot; per worker, messages at or below the sequence its tables hold are skipped. Events
 * whose ids skip some, or a new epoch read without its first message, leave a gap in the
 * worker's table: its snapshot is adopted before the next message (README "Running several
 * replicas", gaps).
 */
@Injectable()
export class KvEventStream implements KvEventPublisher, OnModuleDestroy {
  private readonly logger = new Logger('KvEventStream');
  /** Stream sequence of the last message read here. */
  lastSeq = 0;
  /** Messages still ahead of this replica on the stream, as of the last one read. */
  pending = 0;
  published = 0;
  received = 0;
  /** Times a worker's events on the stream skipped some here (each repaired from its snapshot). */
  gaps = 0;
  /** Workers polled while the bus was away: their events reached no other replica. */
  readonly unpublished = new Set<string>();
  /** Why the last drain that failed to publish failed. */
  lastFailure?: string;
  /** Publications not yet acknowledged by the stream, per worker URL. */
  private readonly sending = new Map<string, number>();
  /** Per worker URL, the drain being sent: the next one goes after it. */
  private readonly queues = new Map<string, Promise<void>>();
  /** The stream consumer: a stop (or another start) while one is being made stops that one. */
  private readonly reader: WatchSlot;
  private reading?: Promise<void>;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly applier: KvEventApplier,
    private readonly positions: WorkerPositions,
    private readonly snapshots: KvSnapshots,
  ) {
    this.reader = new WatchSlot(bus, 'the event stream reader');
  }

  publish(serverUrl: string, events: readonly KvCacheEvent[], restarted: boolean): void {
    if (!events.length) return;
    const url = normalizeServerUrl(serverUrl);
    const epoch = restarted ? this.positions.nextEpoch(url) : this.positions.epoch(url);
    const js = this.bus.js;
    if (!this.bus.connected || !js) {
      this.unpublished.add(url);
      return;
    }
    const h = natsHeaders();
    h.set('worker', url);
    h.set('epoch', String(epoch));
    h.set('replica', this.bus.replicaId);
    h.set('instance', this.bus.instanceId);
    // These events start the epoch: a reader that knew an older one is whole after them.
    if (restarted) h.set(EPOCH_START, '1');
    const limit = partBytesFor(this.bus.nc?.info?.max_payload);
    this.sending.set(url, (this.sending.get(url) ?? 0) + 1);
    // After the worker's earlier drain: the stream must keep a worker's messages in drain order.
    const sent = (this.queues.get(url) ?? Promise.resolve())
      .then(() => this.send(js, url, events, h, limit))
      .finally(() => {
        const left = (this.sending.get(url) ?? 1) - 1;
        if (left > 0) this.sending.set(url, left);
        else this.sending.delete(url);
        if (this.queues.get(url) === sent) this.queues.delete(url);
      });
    this.queues.set(url, sent);
  }

  /**
   * One drain, as many messages as the bus's max_payload asks, at most MAX_UNACKED of them
   * awaiting the stream's ack at a time: a large drain sent all at once made the last acks wait
   * for the whole drain to be stored, past the client's timeout on a busy machine. An ack that
   * times out is waited for again by re-sending under the same message id (publishAcked). A
   * failure, or a message stored out of order, is logged once per drain and ends it (the
   * owner's snapshot hands the worker's table over).
   */
  private async send(js: JetStreamClient, url: string, events: readonly KvCacheEvent[], h: MsgHdrs, limit: number): Promise<void> {
    let failure: Error | undefined;
    const acks: Promise<unknown>[] = [];
    try {
      // Published one after the other: the client writes them in this order, the stream keeps it.
      for await (const text of eventMessages(events, limit)) {
        if (acks.length >= MAX_UNACKED) await acks.shift();
        if (failure) break;
        // The message's id (this process, its count of messages) lets the stream drop a re-send.
        const msgID = `${this.bus.instanceId}.${++this.published}`;
        const stored = publishAcked(js, this.bus.names.eventSubject, text, h, msgID).then(
          ({ resentOutOfOrder }) => {
            if (resentOutOfOrder) failure ??= new Error('a message was lost and stored again after later ones');
          },
          (err: Error) => (failure ??= err),
        );
        acks.push(stored);
      }
    } catch (err) {
      failure ??= err as Error;
    }
    await Promise.all(acks);
    if (failure) {
      this.unpublished.add(url);
      this.lastFailure = failure.message;
      this.logger.warn(`events of ${url} not published: ${failure.message}`);
    }
  }

  /** Whether events of the worker are still on their way to the stream (a lease hand-back waits for them). */
  publishing(serverUrl: string): boolean {
    return this.sending.has(normalizeServerUrl(serverUrl));
  }

  /** The stream's last sequence now (undefined: the bus did not answer). */
  async end(): Promise<number | undefined> {
    try {
      const info = await this.bus.call(async () => this.bus.jsm?.streams.info(this.bus.names.eventStream));
      return info?.state.last_seq;
    } catch {
      return undefined;
    }
  }

  /**
   * (Re)starts reading the stream after `afterSeq` (this replica's position by default). The
   * reader is a WatchSlot follow: opened again from where it stopped, after a pause, when the
   * bus is up but did not answer (a stall) or the reader ended unasked; with the bus down it
   * reads nothing, and the next 'up' starts it.
   */
  async start(afterSeq = this.lastSeq): Promise<void> {
    await this.stop();
    const js = this.bus.js;
    if (!js || !this.bus.connected) return;
    let from = afterSeq;
    this.reading = this.reader.follow(
      async () => {
        // A server that lost its store numbers the re-created stream from 1 again.
        const info = await this.bus.jsm?.streams.info(this.bus.names.eventStream);
        if (info && info.state.last_seq < from) {
          this.logger.warn(`the event stream restarted at sequence ${info.state.last_seq}: reading it from its start`);
          this.positions.resetStreamSeqs();
          from = 0;
        }
        // An ordered consumer: in order, no acks, re-created by the client when it falls out.
        const consumer = await js.consumers.get(this.bus.names.eventStream, { opt_start_seq: from + 1 });
        const messages = await consumer.consume();
        this.lastSeq = from;
        return messages;
      },
      async (m) => {
        const gap = this.onMessage(m);
        // Before the next message: the snapshot must replace the tables before later events land on them.
        if (gap) await this.snapshots.repair(gap);
        this.lastSeq = from = m.seq;
        this.pending = m.info.pending;
        this.received++;
      },
    );
  }

  /** Applies another replica's message; returns the worker's URL when its events showed a gap. */
  private onMessage(m: JsMsg): string | undefined {
    const url = safeUrl(m.headers?.get('worker'));
    if (!url || m.seq <= this.positions.streamSeq(url)) return undefined;
    this.positions.setStreamSeq(url, m.seq);
    // This process applied its own drains when it polled them.
    if (m.headers?.get('instance') === this.bus.instanceId) return undefined;
    const epoch = Number(m.headers?.get('epoch')) || 0;
    const mine = this.positions.epoch(url);
    // Sent before a restart this replica already knows of: its ids mean nothing now.
    if (epoch < mine) return undefined;
    let gap = false;
    if (epoch > mine) {
      this.applier.restart(url);
      this.positions.setEpoch(url, epoch);
      // Without its start, the epoch's first events reached this replica in a snapshot only.
      if (m.headers?.get(EPOCH_START)) this.positions.clearGap(url);
      else gap = true;
    }
    let events: KvCacheEvent[];
    try {
      events = parseKvEventsFast(m.string());
    } catch (err) {
      this.logger.warn(`skipped a malformed event message from ${url}: ${(err as Error).message}`);
      return undefined;
    }
    gap ||= skipsEvents(this.applier.lastEventId(url), events);
    this.applier.apply(url, events);
    if (!gap || !this.positions.markGap(url)) return undefined;
    this.gaps++;
    this.logger.log(`events of ${url} skipped some here (they were handed over in a snapshot): adopting its snapshot`);
    return url;
  }

  async stop(): Promise<void> {
    this.reader.stop();
    await this.reading;
    this.reading = undefined;
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
    // Drains still being cut go out before the bus closes (each publish ends by its ack or the client's timeout).
    await Promise.allSettled([...this.queues.values()]);
  }
}

/** Whether the first event after `lastId` is not the next id (event ids count up by one per worker). */
function skipsEvents(lastId: number | undefined, events: readonly KvCacheEvent[]): boolean {
  if (lastId === undefined) return false;
  for (const event of events) {
    const id = event.continues ?? event.event_id;
    if (id > lastId) return id > lastId + 1;
  }
  return false;
}

function safeUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return normalizeServerUrl(url);
  } catch {
    return undefined;
  }
}
