import type { KvBlockTable } from './kv-block-table';

/**
 * What the KV room needs of a worker: its block tables (one per hash algorithm) and the
 * algorithm its untagged events use. The server registry's states implement it; the KV room
 * never reads the rest of a server's state.
 */
export interface KvWorker {
  readonly url: string;
  /** The algorithm the worker hashes with: as its events last said, else its /server_info, else v1. */
  readonly kvHashAlgo: string;
  /** The hash algorithm the worker's latest KV cache event was tagged with, if any. */
  announcedKvHashAlgo?: string;
  readonly serverInfo?: Readonly<Record<string, unknown>>;
  kvTable(algo?: string): KvBlockTable;
}
