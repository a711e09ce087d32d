import { describe, expect, it } from '@jest/globals';
import { RetryLoop } from '../../src/discovery/lease-registration';
import { waitFor } from '../support/router-app';

describe('the retry loop of worker registrations', () => {
  it('retries a refused or failed attempt until one succeeds, reporting each failure', async () => {
    const outcomes: Array<boolean | Error> = [false, new Error('etcd down'), true];
    const failures: Array<string | undefined> = [];
    const loop = new RetryLoop(1, () => false);
    const ok = await loop.until(
      async () => {
        const next = outcomes.shift()!;
        if (next instanceof Error) throw next;
        return next;
      },
      (err) => failures.push(err?.message),
    );
    expect(ok).toBe(true);
    expect(failures).toEqual([undefined, 'etcd down']);
  });

  it('ends its wait at once when cancelled, with no attempt after the stop', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    let stopped = false;
    let attempts = 0;
    // A wait far beyond the test's timeout: only cancel() can end it in time.
    const loop = new RetryLoop(10 * 60_000, () => stopped);
    const done = loop.until(
      async () => {
        attempts++;
        throw new Error('unreachable');
      },
      () => undefined,
    );
    await waitFor(() => attempts === 1, 5_000, 'the first attempt');
    stopped = true;
    loop.cancel();
    await expect(done).resolves.toBe(false);
    expect(attempts).toBe(1);
    expect(timers()).toBe(before);
  });
});
