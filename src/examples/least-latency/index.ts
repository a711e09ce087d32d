export * from './latency-tracker.service';
export * from './least-latency.module';
export * from './least-latency.policy';
