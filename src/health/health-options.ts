import type { AppConfig } from '../config';

/** The health section of the config in the units the health module works with. */
export interface HealthOptions {
  intervalMs: number;
  timeoutMs: number;
  failureThreshold: number;
  startupWaitMs: number;
  ejectOnConnectFailure: boolean;
  breaker: { enabled: boolean; failureThreshold: number; cooldownMs: number };
}

export function healthOptionsFrom(config: AppConfig): HealthOptions {
  const h = config.health;
  return {
    intervalMs: h.interval_s * 1000,
    timeoutMs: h.timeout_s * 1000,
    failureThreshold: h.failure_threshold,
    startupWaitMs: h.startup_wait_s * 1000,
    ejectOnConnectFailure: h.eject_on_connect_failure,
    breaker: {
      enabled: h.circuit_breaker.enabled,
      failureThreshold: h.circuit_breaker.failure_threshold,
      cooldownMs: h.circuit_breaker.cooldown_s * 1000,
    },
  };
}
