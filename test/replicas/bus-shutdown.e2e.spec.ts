import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { AppConfigModule, buildConfig } from '../../src/config';
import { BusClosingError, ReplicaBus } from '../../src/replicas/replica-bus.service';
import { WatchSlot } from '../../src/replicas/watch-slot';
import { startNats, type NatsServer } from '../support/nats-server';
import { waitFor } from '../support/router-app';

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('the replica bus closes after the bus calls under way', () => {
  let nats: NatsServer;
  beforeAll(async () => {
    nats = await startNats();
  });
  afterAll(async () => {
    await nats?.close();
  });

  const startBus = async (): Promise<{ moduleRef: TestingModule; bus: ReplicaBus }> => {
    const config = buildConfig({ generation_servers: { urls: ['http://127.0.0.1:9'] }, cluster: { bus: nats.url, replica_id: 'shutdown-test' } });
    const moduleRef = await Test.createTestingModule({ imports: [AppConfigModule.forRoot({ config })], providers: [ReplicaBus] }).compile();
    await moduleRef.init();
    const bus = moduleRef.get(ReplicaBus);
    await waitFor(() => bus.connected, 15_000, 'bus connected');
    return { moduleRef, bus };
  };

  it('waits for a call under way, refuses new ones meanwhile, then drains the connection', async () => {
    const { moduleRef, bus } = await startBus();
    const nc = bus.nc!;
    const kv = bus.load!;
    const release = gate();
    const underWay = bus.call(async () => {
      await release.opened;
      return kv.put('shutdown-test', 'last words');
    });
    const closed = moduleRef.close();
    await waitFor(
      () => bus.call(async () => undefined).then(() => false, (err: unknown) => err instanceof BusClosingError),
      10_000,
      'new calls refused',
    );
    expect(bus.connected).toBe(false);
    expect(nc.isClosed()).toBe(false);
    release.open();
    // The put reached the server: the connection outlived the call.
    expect(await underWay).toBeGreaterThan(0);
    await closed;
    expect(nc.isClosed()).toBe(true);
  });

  it('a KV watch that opens after its slot was stopped is stopped at once and reads nothing', async () => {
    const { moduleRef, bus } = await startBus();
    const kv = bus.load!;
    const slot = new WatchSlot(bus, 'the test watch');
    const release = gate();
    const seen: string[] = [];
    let stoppedByFollow = false;
    const following = slot.follow(
      async () => {
        await release.opened;
        const iterator = await kv.watch({ key: '>' });
        const stop = iterator.stop.bind(iterator);
        iterator.stop = () => {
          stoppedByFollow = true;
          stop();
        };
        return iterator;
      },
      (entry) => void seen.push(entry.key),
    );
    slot.stop();
    await kv.put('while-opening', 'x');
    release.open();
    await following;
    expect(stoppedByFollow).toBe(true);
    expect(seen).toEqual([]);
    await moduleRef.close();
  });

  it('a second watch on the slot stops the first', async () => {
    const { moduleRef, bus } = await startBus();
    const kv = bus.load!;
    const slot = new WatchSlot(bus, 'the test watch');
    const first: string[] = [];
    const second: string[] = [];
    const firstDone = slot.follow(() => kv.watch({ key: '>' }), (e) => void first.push(e.key));
    await kv.put('one', '1');
    await waitFor(() => first.includes('one'), 10_000, 'first watch sees its key');
    const secondDone = slot.follow(() => kv.watch({ key: '>' }), (e) => void second.push(e.key));
    // The first watch ends once the second one is being opened.
    await firstDone;
    await kv.put('two', '2');
    await waitFor(() => second.includes('two'), 10_000, 'second watch sees the new key');
    expect(first).not.toContain('two');
    slot.stop();
    await secondDone;
    await moduleRef.close();
  });
});
