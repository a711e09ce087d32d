import type { BlockKey } from '../kv-cache';
import type { ServerState } from '../servers';

export const ROUTED_BLOCKS_SINK = Symbol('ROUTED_BLOCKS_SINK');

/**
 * Told of every request a KV-aware router saw succeed, with the blocks it recorded on the
 * server (none when it records nothing), e.g. to share them with other router replicas.
 */
export interface RoutedBlocksSink {
  routed(server: ServerState, algo: string, hashes: readonly BlockKey[], ttlMs: number): void;
}
