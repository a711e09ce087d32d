import { AsyncLocalStorage } from 'node:async_hooks';

/** What the router knows of the client request being served, wherever the code runs. */
export interface RequestContext {
  readonly requestId: string;
  /** performance.now() when the request arrived (before body parsing). */
  readonly arrivedAt: number;
}

/**
 * One store for the process: log lines written anywhere while a request is served (Nest
 * loggers of any module included) pick up its id without passing it along.
 */
export const requestContextStorage = new AsyncLocalStorage<RequestContext>();

export function currentRequestContext(): RequestContext | undefined {
  return requestContextStorage.getStore();
}

export function currentRequestId(): string | undefined {
  return requestContextStorage.getStore()?.requestId;
}
