import { describe, expect, it } from '@jest/globals';
import { serializeKvEvents, type KvCacheEvent } from '../../src/kv-cache';
import { KvEventApplier } from '../../src/kv-cache/kv-event-applier';
import { KvEventStream } from '../../src/replicas/kv-event-stream.service';
import { KvSync } from '../../src/replicas/kv-sync.service';
import { rendezvousOwner } from '../../src/replicas/rendezvous';
import { waitFor } from '../support/router-app';
import { clusterAdmin, confirmed, type Replica } from './support/replica-cluster';
import { storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

const PER_EVENT = 1_000;
/** Events the worker hands out at most (bounds the test). */
const MAX_EVENTS = 1_000;
/** Drains after the lease moved before the worker stops caching. */
const AFTER_MOVE = 8;

const storedEvent = (id: number): KvCacheEvent => storedBlocks(id, Array.from({ length: PER_EVENT }, (_, i) => BigInt(id * PER_EVENT + i)));

/** The first of `second-0`, `second-1`, ... that rendezvous hashing makes the worker's owner over `first`. */
function laterOwner(url: string, first: string): string {
  for (let i = 0; ; i++) if (rendezvousOwner(url, [first, `second-${i}`]) === `second-${i}`) return `second-${i}`;
}

/**
 * The first replica up takes the only worker; the one started after it is the worker's
 * rendezvous owner, so the lease moves to it while the worker keeps caching blocks (an event
 * per drain). The new owner's stream reader is held back over the move: it must not drain the
 * worker before it has read what the first replica published (a drained event is gone, and an
 * event id at or below the last applied one is skipped). No event is lost or applied twice:
 * both replicas, and one started after the move, end with the worker's whole cache.
 */
describe('router replicas: a poll lease handed back during traffic', () => {
  // A lease moves a whole TTL after its owner appears: 3 s leaves room to hold the new owner's
  // stream reader back before the move, however slow the machine is to start a replica.
  const fixture = useScriptedWorkerReplicas(['first'], { lease_ttl_s: 3 });
  const { replicas } = fixture;
  const lastId = (r: Replica): number | undefined => r.app.get(KvEventApplier).lastEventId(fixture.worker.url);
  const size = (r: Replica): number => confirmed(r.app, fixture.worker.url).size;

  it('moves to the rendezvous owner, which drains only after reading the stream, and every view ends complete', async () => {
    const [first] = replicas;
    await waitFor(async () => {
      const view = await clusterAdmin(first);
      return view.bus.state === 'connected' && view.workers[0]?.owner === 'first';
    }, 15_000, 'the first replica holds the worker\'s lease');
    let next = 0;
    let drainsAfterMove = -1;
    fixture.worker.kvEvents = () => {
      if (next >= MAX_EVENTS || drainsAfterMove >= AFTER_MOVE) return '[]';
      if (drainsAfterMove >= 0) drainsAfterMove++;
      return serializeKvEvents([storedEvent(next++)]);
    };
    const secondId = laterOwner(fixture.worker.url, 'first');
    const second = await fixture.start(secondId);
    await waitFor(async () => (await clusterAdmin(second)).bus.state === 'connected', 15_000, 'the second replica on the bus');
    await second.app.get(KvSync).settled();
    const stream = second.app.get(KvEventStream);
    await stream.stop();
    const heldAt = next;
    await waitFor(async () => {
      const views = await Promise.all(replicas.map(clusterAdmin));
      return views.every((v) => v.workers[0]?.owner === secondId);
    }, 30_000, 'the lease moved to its rendezvous owner');
    // The first replica drained on until the hand-back: events the second has not read yet.
    expect(next).toBeGreaterThan(heldAt);
    drainsAfterMove = 0;
    await stream.start();
    await waitFor(() => drainsAfterMove >= AFTER_MOVE || next >= MAX_EVENTS, 30_000, 'the new owner drains');
    const events = next;
    await waitFor(() => replicas.every((r) => lastId(r) === events - 1), 30_000, 'every replica applied the last event');
    expect(Object.fromEntries([first, second].map((r) => [r.id, size(r)]))).toEqual({ first: events * PER_EVENT, [secondId]: events * PER_EVENT });

    const late = await fixture.start('late');
    await waitFor(() => lastId(late) === events - 1, 30_000, 'the late replica caught up');
    expect(size(late)).toBe(events * PER_EVENT);
  });
});
