import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { ConsumerMessages } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { normalizeServerUrl } from '../config';
import { serializeKvEvents } from '../kv-cache/kv-events';
import { parseKvEventsFast } from '../routing/kv';
import type { KvEventPublisher } from './kv-seams';
import { ReplicaBus } from './replica-bus.service';
import { KvEventApplier } from './replica-event-applier';

/**
 * The KV cache events of every worker on one JetStream stream. The replica that polled a
 * worker publishes what it drained (the worker URL in a header, the events as the worker
 * sent them); every replica reads the stream in order and applies each message, the
 * poller's own too (the applier skips event ids already applied). The stream sequence
 * tells where a replica is, so it resumes after an outage or starts after a snapshot.
 */
@Injectable()
export class KvEventStream implements KvEventPublisher, OnModuleDestroy {
  private readonly logger = new Logger('KvEventStream');
  /** Stream sequence of the last message applied here. */
  lastSeq = 0;
  /** Messages still ahead of this replica on the stream, as of the last one read. */
  pending = 0;
  published = 0;
  received = 0;
  /** Workers polled while the bus was away: their events reached no other replica. */
  readonly unpublished = new Set<string>();
  private messages?: ConsumerMessages;
  private reading?: Promise<void>;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly applier: KvEventApplier,
  ) {}

  publish(serverUrl: string, events: readonly unknown[]): void {
    if (!events.length) return;
    const js = this.bus.js;
    if (!this.bus.connected || !js) {
      this.unpublished.add(normalizeServerUrl(serverUrl));
      return;
    }
    const h = natsHeaders();
    h.set('worker', serverUrl);
    h.set('replica', this.bus.replicaId);
    this.published++;
    js.publish(this.bus.names.eventSubject, serializeKvEvents(events), { headers: h }).catch((err: Error) => {
      this.unpublished.add(normalizeServerUrl(serverUrl));
      this.logger.warn(`events of ${serverUrl} not published: ${err.message}`);
    });
  }

  /** (Re)starts reading the stream after `fromSeq` (this replica's position by default). */
  async start(afterSeq = this.lastSeq): Promise<void> {
    await this.stop();
    const js = this.bus.js;
    if (!js || !this.bus.connected) return;
    try {
      // An ordered consumer: in order, no acks, re-created by the client when it falls out.
      const consumer = await js.consumers.get(this.bus.names.eventStream, { opt_start_seq: afterSeq + 1 });
      const messages = await consumer.consume();
      this.messages = messages;
      this.reading = this.read(messages);
    } catch (err) {
      this.logger.warn(`cannot read the event stream: ${(err as Error).message}`);
    }
  }

  private async read(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        const worker = m.headers?.get('worker');
        if (worker) {
          try {
            this.applier.apply(worker, parseKvEventsFast(m.string()));
          } catch (err) {
            this.logger.warn(`skipped a malformed event message from ${worker}: ${(err as Error).message}`);
          }
        }
        this.lastSeq = m.seq;
        this.pending = m.info.pending;
        this.received++;
      }
    } catch (err) {
      if (this.bus.connected) this.logger.warn(`event stream reading ended: ${(err as Error).message}`);
    }
  }

  async stop(): Promise<void> {
    const messages = this.messages;
    this.messages = undefined;
    if (messages) await messages.close().catch(() => undefined);
    await this.reading;
    this.reading = undefined;
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
  }
}

