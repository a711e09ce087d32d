export * from './context/request-context';
export * from './logging/app-logger';
export * from './logging/pino-logger.service';
export * from './metrics/metrics.service';
export * from './observability.module';
export * from './perf/perf-metrics.store';
