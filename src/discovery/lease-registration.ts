import type { Etcd3, Lease } from 'etcd3';

/**
 * The parts every worker registration shares (the `trtllm/` key of metadata_server_config and
 * the worker key of a disagg_cluster): a key on a lease, retried until it is written, released
 * by revoking the lease.
 */

/** Stops listening to a lease: a later 'lost' neither matters nor goes unhandled. */
export function quietLease(lease: Lease): void {
  lease.removeAllListeners();
  lease.on('lost', () => undefined);
}

/** Puts `key` on a new lease; a failed put revokes that lease again and throws. */
export async function putOnLease(
  client: Etcd3,
  key: string,
  value: string,
  options: { ttlS: number; onLost: (lease: Lease, err: Error) => void },
): Promise<Lease> {
  // Kept alive by the client until revoked or lost.
  const lease = client.lease(options.ttlS);
  lease.on('lost', (err: Error) => options.onLost(lease, err));
  try {
    await lease.put(key).value(value).exec();
  } catch (err) {
    quietLease(lease);
    await lease.revoke().catch(() => undefined);
    throw err;
  }
  return lease;
}

/** Revokes a lease, which deletes its key; when etcd refuses the revoke, deletes the key itself. */
export async function revokeOrDelete(client: Etcd3, lease: Lease | undefined, key: string): Promise<void> {
  if (!lease) return;
  quietLease(lease);
  await lease.revoke().catch(() => client.delete().key(key).exec().catch(() => undefined));
}

/**
 * Runs an attempt until it succeeds (returns true) or the owner stops, waiting `retryMs`
 * between attempts; `cancel()` ends every wait at once, so closing never waits for a retry.
 */
export class RetryLoop {
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly retryMs: number,
    private readonly stopped: () => boolean,
  ) {}

  async until(attempt: () => Promise<boolean>, onFailure: (err: Error | undefined) => void): Promise<boolean> {
    while (!this.stopped()) {
      try {
        if (await attempt()) return true;
        onFailure(undefined);
      } catch (err) {
        onFailure(err as Error);
      }
      if (this.stopped()) break;
      await this.pause();
    }
    return false;
  }

  cancel(): void {
    for (const wake of [...this.waiting]) wake();
  }

  private pause(): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, this.retryMs);
      this.waiting.add(wake);
    });
  }
}
