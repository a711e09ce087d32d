import { expect } from '@jest/globals';
import { steadyNowSeconds } from '../../src/observability/perf/steady-clock';
import { postJson, waitFor } from './router-app';

/**
 * Simulated workers whose steady clocks run `skewS` seconds off the router's, so that only the
 * router's alignment (POST /steady_clock_offset) brings their reported times in line.
 */
export async function skewWorkerClocks(urls: readonly string[], skewS: number): Promise<void> {
  for (const url of urls) {
    const res = await postJson(`${url}/steady_clock_offset`, { offset: skewS });
    expect(res.status).toBe(200);
  }
}

/**
 * Until every worker reports the router's time again: the router aligns a worker once it is
 * ready, in the background, and a request that races the alignment sees the worker's clock jump
 * mid-request (its end before its start).
 */
export async function waitForAlignedClocks(urls: readonly string[], skewS: number): Promise<void> {
  const aligned = async (url: string): Promise<boolean> => {
    const { receive_ts } = (await (await fetch(`${url}/steady_clock_offset`)).json()) as { receive_ts: number };
    return Math.abs(receive_ts - steadyNowSeconds()) < skewS / 2;
  };
  await waitFor(async () => (await Promise.all(urls.map(aligned))).every(Boolean), 10_000, 'worker clocks aligned');
}
