import { describe, expect, it } from '@jest/globals';
import { BUS_RETRY_FIRST_MS, BUS_RETRY_MAX_MS, BusRetry } from '../../src/replicas/bus-retry';

/** What BusRetry told the bus: each failure's pause and each recovery. */
function recordingBus(): { pauses: number[]; recoveries: number[]; retried(what: string, err: unknown, streak: number, pauseMs: number): void; recovered(what: string, failures: number): void } {
  const pauses: number[] = [];
  const recoveries: number[] = [];
  return { pauses, recoveries, retried: (_w, _e, _s, ms) => void pauses.push(ms), recovered: (_w, n) => void recoveries.push(n) };
}

describe('BusRetry', () => {
  it('doubles its pause per failure up to the cap, and starts over after a success', async () => {
    const bus = recordingBus();
    const retry = new BusRetry(bus, 'work');
    for (let i = 0; i < 7; i++) {
      const again = retry.failed(new Error('timeout'));
      retry.cancel();
      expect(await again).toBe(false);
    }
    expect(bus.pauses).toEqual([250, 500, 1_000, 2_000, 4_000, BUS_RETRY_MAX_MS, BUS_RETRY_MAX_MS]);
    retry.succeeded();
    expect(bus.recoveries).toEqual([7]);
    retry.succeeded();
    expect(bus.recoveries).toEqual([7]);
    const again = retry.failed(new Error('timeout'));
    expect(bus.pauses.at(-1)).toBe(BUS_RETRY_FIRST_MS);
    expect(await again).toBe(true);
  });
});
