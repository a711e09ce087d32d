/** One /health probe of a worker. */
export interface HealthResult {
  ok: boolean;
  at: number;
  latencyMs: number;
  status?: number;
  error?: string;
}

/**
 * What a failed health check says in admin state and logs: the kind of failure, without the
 * errno text (addresses, ports) that would turn the admin API into a port scanner.
 */
export function healthErrorOf(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNABORTED' || code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
  if (code === 'ERR_BAD_RESPONSE' && /maxContentLength/.test(String((err as Error).message))) return 'answer too large';
  return 'failed';
}
