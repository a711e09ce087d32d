import type { BlockKey } from '../kv-cache';

/** Block hashes as JSON: 64-bit ones as decimal strings, hex ones as they are. */
export interface EncodedBlocks {
  n?: string[];
  s?: string[];
}

export function encodeBlocks(hashes: Iterable<BlockKey>): EncodedBlocks {
  const n: string[] = [];
  const s: string[] = [];
  for (const h of hashes) {
    if (typeof h === 'bigint') n.push(h.toString());
    else s.push(h);
  }
  const out: EncodedBlocks = {};
  if (n.length) out.n = n;
  if (s.length) out.s = s;
  return out;
}

/** Malformed entries are skipped: a peer's message never breaks this replica's table. */
export function decodeBlocks(encoded: EncodedBlocks | undefined): BlockKey[] {
  const out: BlockKey[] = [];
  if (!encoded || typeof encoded !== 'object') return out;
  if (Array.isArray(encoded.n)) {
    for (const d of encoded.n) if (typeof d === 'string' && /^\d{1,20}$/.test(d)) out.push(BigInt(d));
  }
  if (Array.isArray(encoded.s)) for (const h of encoded.s) if (typeof h === 'string') out.push(h);
  return out;
}
