export * from './circuit-breaker';
export * from './health-monitor.service';
export * from './health-options';
export * from './health.module';
export * from './server-preparer.service';
export * from './startup-gate.service';
