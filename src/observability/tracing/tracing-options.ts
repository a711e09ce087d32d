import type { AppConfig } from '../../config';

export interface TracingOptions {
  /** Where spans go; undefined lets the exporter read OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT. */
  url: string | undefined;
}

/**
 * Tracing is on when an endpoint is given: `otlp_config.otlp_traces_endpoint` (as in
 * TensorRT-LLM's config) or the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
 * OTEL_EXPORTER_OTLP_ENDPOINT; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.
 */
export function tracingOptions(config: Pick<AppConfig, 'otlp_config'>, env: NodeJS.ProcessEnv = process.env): TracingOptions | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const configured = config.otlp_config?.otlp_traces_endpoint;
  if (configured) return { url: configured };
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT) return { url: undefined };
  return undefined;
}
