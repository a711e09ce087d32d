import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { headers, TimeoutError, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { publishAcked } from '../../src/replicas/acked-publish';
import { startNats, type NatsServer } from '../support/nats-server';

const STREAM = 'acked';
const SUBJECT = 'acked.events';
/** Short, so a frozen server makes the first ack time out quickly. */
const ACK_TIMEOUT_MS = 500;

/**
 * A stream message whose ack does not come in time is sent again under the same id: the stream
 * keeps one copy when the first had been stored, and the caller learns when the first had been
 * lost (so later messages may precede it). The server is real; only the first send of the lost
 * case is withheld from it.
 */
describe('publishAcked: a late ack against a real JetStream server', () => {
  let nats: NatsServer;
  let nc: NatsConnection;
  let js: JetStreamClient;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: STREAM, subjects: [SUBJECT] });
    js = jetstream(nc, { timeout: ACK_TIMEOUT_MS });
  });
  afterAll(async () => {
    await nats?.freeze(false);
    await nc?.close();
    await nats?.close();
  });

  const stored = async (): Promise<number> => (await (await jetstreamManager(nc)).streams.info(STREAM)).state.messages;

  /** The real client, with a hook run before each send. */
  const withHook = (beforeSend: (attempt: number) => 'send' | 'lose'): { client: JetStreamClient; sends: () => number } => {
    let sends = 0;
    const client = Object.create(js) as JetStreamClient;
    client.publish = (subject, data, opts) => {
      sends++;
      if (beforeSend(sends) === 'lose') return Promise.reject(new TimeoutError());
      return js.publish(subject, data, opts);
    };
    return { client, sends: () => sends };
  };

  it('keeps one copy when a stalled server stored the first send and acked it late', async () => {
    const before = await stored();
    await nats.freeze(true);
    // The first send times out against the frozen server; the server wakes before the second.
    const { client, sends } = withHook((attempt) => {
      if (attempt === 2) void nats.freeze(false);
      return 'send';
    });
    const result = await publishAcked(client, SUBJECT, 'late', headers(), 'late-1');
    expect(sends()).toBe(2);
    expect(result).toEqual({ resentOutOfOrder: false });
    expect((await stored()) - before).toBe(1);
  });

  it('reports a first send that never reached the stream', async () => {
    const before = await stored();
    const { client, sends } = withHook((attempt) => (attempt === 1 ? 'lose' : 'send'));
    const result = await publishAcked(client, SUBJECT, 'lost', headers(), 'lost-1');
    expect(sends()).toBe(2);
    expect(result).toEqual({ resentOutOfOrder: true });
    expect((await stored()) - before).toBe(1);
  });

  it('gives up after its attempts, with the timeout', async () => {
    const { client, sends } = withHook(() => 'lose');
    await expect(publishAcked(client, SUBJECT, 'never', headers(), 'never-1')).rejects.toBeInstanceOf(TimeoutError);
    expect(sends()).toBe(3);
  });
});
