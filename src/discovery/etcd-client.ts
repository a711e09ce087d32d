import { Etcd3, type IOptions, type Watcher } from 'etcd3';

/**
 * Watch reconnect backoff: doubles from 100 ms to at most 1 s, so the watch is back within a
 * second of etcd returning (the client's default grows to 30 s).
 */
class CappedBackoff {
  constructor(readonly duration = 100) {}
  next(): CappedBackoff {
    return new CappedBackoff(Math.min(this.duration * 2, 1_000));
  }
}

type HostPolicy = ReturnType<NonNullable<NonNullable<IOptions['faultHandling']>['host']>>;

const NEVER_ABORTED = new AbortController().signal;

/**
 * With a single etcd host the client's default per-host circuit breaker (open for 5 s after 3
 * failures) only delays reconnecting after an etcd restart: there is no other host to try.
 * The client calls nothing but `execute` on it.
 */
function passThroughPolicy(): HostPolicy {
  const policy = { execute: async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> => fn({ signal: NEVER_ABORTED }) };
  return policy as unknown as HostPolicy;
}

export interface EtcdClientOptions {
  /** `host:port` (or several, comma-separated). */
  hosts: string;
  dialTimeoutMs?: number;
}

export function createEtcdClient(options: EtcdClientOptions): Etcd3 {
  const hosts = options.hosts
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean)
    .map((h) => (/^https?:\/\//.test(h) ? h : `http://${h}`));
  return new Etcd3({
    hosts,
    dialTimeout: options.dialTimeoutMs ?? 3_000,
    faultHandling: {
      watchBackoff: new CappedBackoff(),
      ...(hosts.length === 1 ? { host: () => passThroughPolicy() } : {}),
    },
  });
}

/**
 * Stops a watch for good: no more events, errors swallowed, and at most `waitMs` waiting for
 * etcd to confirm (an unreachable etcd never does).
 */
export async function cancelWatcher(watcher: Watcher | undefined, waitMs = 1_000): Promise<void> {
  if (!watcher) return;
  watcher.removeAllListeners();
  watcher.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([watcher.cancel().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
  clearTimeout(timer);
}
