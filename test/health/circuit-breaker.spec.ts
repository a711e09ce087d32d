import { describe, expect, it } from '@jest/globals';
import { CircuitBreaker } from '../../src/health';

describe('CircuitBreaker', () => {
  const make = () => {
    const clock = { now: 1_000 };
    const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 500, now: () => clock.now });
    return { clock, breaker };
  };

  it('opens after the threshold of consecutive failures, not before', () => {
    const { breaker } = make();
    expect(breaker.recordFailure()).toBe(false);
    expect(breaker.recordFailure()).toBe(false);
    expect(breaker.state).toBe('closed');
    expect(breaker.recordFailure()).toBe(true);
    expect(breaker.snapshot()).toEqual({ state: 'open', consecutive_failures: 3, open_until: 1_500 });
    // Further failures while open neither re-trip nor extend the cool-down.
    expect(breaker.recordFailure()).toBe(false);
    expect(breaker.snapshot().open_until).toBe(1_500);
  });

  it('a success in between resets the streak', () => {
    const { breaker } = make();
    breaker.recordFailure();
    breaker.recordFailure();
    breaker.recordSuccess();
    expect(breaker.consecutiveFailures).toBe(0);
    breaker.recordFailure();
    breaker.recordFailure();
    expect(breaker.state).toBe('closed');
  });

  it('refuses readmission during the cool-down, then lets the half-open probe decide', () => {
    const { clock, breaker } = make();
    for (let i = 0; i < 3; i++) breaker.recordFailure();
    clock.now = 1_499;
    expect(breaker.allowsReadmission(true)).toBe(false);
    expect(breaker.state).toBe('open');
    clock.now = 1_500;
    expect(breaker.state).toBe('half_open');
    // A failed probe opens it for another cool-down.
    expect(breaker.allowsReadmission(false)).toBe(false);
    expect(breaker.snapshot()).toMatchObject({ state: 'open', open_until: 2_000 });
    clock.now = 2_000;
    expect(breaker.allowsReadmission(true)).toBe(true);
    expect(breaker.snapshot()).toEqual({ state: 'closed', consecutive_failures: 0 });
  });

  it('a closed breaker never holds a server back', () => {
    const { breaker } = make();
    expect(breaker.allowsReadmission(true)).toBe(true);
    expect(breaker.allowsReadmission(false)).toBe(true);
  });
});
