import type { JetStreamClient } from '@nats-io/jetstream';
import { TimeoutError, type MsgHdrs } from '@nats-io/nats-core';

/** Sends of one stream message whose ack did not come in time, at most. */
const PUBLISH_ATTEMPTS = 3;

/** How one message reached the stream. */
export interface AckedPublish {
  /**
   * Stored by a later send: the first was lost, not only acked late, so messages sent after it
   * may sit before it on the stream.
   */
  resentOutOfOrder: boolean;
}

/**
 * Publishes one message and waits for the stream's ack, sending it again when the ack times
 * out. A late ack is the common case on a busy machine: the stream stored the message and the
 * repeat, carrying the same Nats-Msg-Id, is dropped as a duplicate inside the stream's
 * duplicate window (two minutes by default), so a slow server costs time, not a drain.
 */
export async function publishAcked(js: JetStreamClient, subject: string, data: string, headers: MsgHdrs, msgID: string): Promise<AckedPublish> {
  for (let attempt = 1; ; attempt++) {
    try {
      const ack = await js.publish(subject, data, { headers, msgID });
      return { resentOutOfOrder: attempt > 1 && !ack.duplicate };
    } catch (err) {
      if (!(err instanceof TimeoutError) || attempt >= PUBLISH_ATTEMPTS) throw err;
    }
  }
}
