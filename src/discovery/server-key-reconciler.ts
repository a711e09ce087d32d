import type { Logger } from '@nestjs/common';
import type { ServerRole } from '../config/server-role';
import type { ServerRegistry, ServerSource } from '../servers';

/** What a discovery key names: one server of one pool. */
export interface KeyedServer {
  url: string;
  role: ServerRole;
}

export type ParsedKey<E extends KeyedServer> = { ok: true; entry: E } | { ok: false; reason: string };

export interface ReconcilerOptions<E extends KeyedServer> {
  registry: ServerRegistry;
  /** The registry source of the servers these keys add; only those are removed again. */
  source: ServerSource;
  logger: Logger;
  /** How the log names the keys (`etcd key`, `disagg_cluster key`). */
  keyLabel: string;
  describeJoin: (key: string, entry: E) => string;
  describeLeave: (key: string, entry: E) => string;
}

/**
 * The servers a set of discovery keys names, applied to the registry as keys are put and
 * deleted (etcd's `trtllm/` keys, a disagg_cluster's worker keys). A key whose value names no
 * server is remembered with its reason and logged once per change; a server stays while any key
 * still names it; a key put again for a server removed meanwhile (declared dead) brings it back.
 */
export class ServerKeyReconciler<E extends KeyedServer> {
  private readonly valid = new Map<string, E>();
  private readonly ignored = new Map<string, string>();

  constructor(private readonly options: ReconcilerOptions<E>) {}

  /** Valid keys and the server each names. */
  get entries(): ReadonlyMap<string, E> {
    return this.valid;
  }

  get ignoredCount(): number {
    return this.ignored.size;
  }

  /** Every key seen, valid or not (what a full re-read compares against). */
  knownKeys(): string[] {
    return [...this.valid.keys(), ...this.ignored.keys()];
  }

  put(key: string, parsed: ParsedKey<E>): void {
    const { registry, source, logger, keyLabel } = this.options;
    const previous = this.valid.get(key);
    if (!parsed.ok) {
      if (this.ignored.get(key) !== parsed.reason) logger.warn(`${keyLabel} ${key} ignored: ${parsed.reason}`);
      this.ignored.set(key, parsed.reason);
      if (previous) this.leave(key, previous);
      return;
    }
    this.ignored.delete(key);
    const entry = parsed.entry;
    if (previous && previous.url === entry.url && previous.role === entry.role) {
      if (!registry.findByUrl(entry.role, entry.url)) registry.add({ url: entry.url, role: entry.role, source });
      return;
    }
    if (previous) this.leave(key, previous);
    this.valid.set(key, entry);
    logger.log(this.options.describeJoin(key, entry));
    registry.add({ url: entry.url, role: entry.role, source });
  }

  delete(key: string): void {
    this.ignored.delete(key);
    const entry = this.valid.get(key);
    if (entry) this.leave(key, entry);
  }

  /** Removes a key's server unless another key still names it (or it came from elsewhere). */
  private leave(key: string, entry: E): void {
    this.valid.delete(key);
    this.options.logger.log(this.options.describeLeave(key, entry));
    for (const other of this.valid.values()) if (other.role === entry.role && other.url === entry.url) return;
    const server = this.options.registry.findByUrl(entry.role, entry.url);
    if (server?.source === this.options.source) this.options.registry.remove(server);
  }
}
