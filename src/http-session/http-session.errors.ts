/**
 * Thrown when the shared HTTP session is used before the app container initialised it or
 * after it was destroyed. It is a programming/lifecycle error, never an upstream failure:
 * callers must not turn it into "server unhealthy".
 */
export class HttpSessionClosedError extends Error {
  constructor(state: 'not yet opened' | 'closed') {
    super(`HttpSession is not open (${state}): it lives between onModuleInit and onModuleDestroy`);
    this.name = 'HttpSessionClosedError';
  }
}
