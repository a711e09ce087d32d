export interface HttpSessionOptions {
  /** Keep-alive connections kept per upstream origin. */
  connectionsPerServer: number;
  connectTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** Default deadline for a whole upstream response head (ms). */
  requestTimeoutMs: number;
  /** Largest control-call answer the axios face reads (its maxContentLength); larger ones fail. */
  maxControlAnswerBytes: number;
}

export const HTTP_SESSION_OPTIONS = Symbol('HTTP_SESSION_OPTIONS');

export const DEFAULT_HTTP_SESSION_OPTIONS: HttpSessionOptions = {
  connectionsPerServer: 128,
  connectTimeoutMs: 5_000,
  keepAliveTimeoutMs: 30_000,
  requestTimeoutMs: 180_000,
  maxControlAnswerBytes: 8 * 1024 * 1024,
};
