export { RequestTracing } from './request-tracing.service';
export type { RequestTrace } from './request-trace';
export { tracingOptions } from './tracing-options';
