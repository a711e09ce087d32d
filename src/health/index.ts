export * from './active-health-checker.service';
export * from './circuit-breaker';
export * from './health-options';
export * from './health.module';
export * from './outlier-detector.service';
export * from './server-preparer.service';
export * from './startup-gate.service';
