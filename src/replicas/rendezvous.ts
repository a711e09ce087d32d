/** FNV-1a, 32 bits: a cheap, stable string hash (the same on every replica). */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * Rendezvous (highest random weight) hashing: the replica a worker belongs to. Every replica
 * that sees the same set of replicas picks the same one, and a replica leaving moves only its
 * own workers.
 */
export function rendezvousOwner(key: string, replicas: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const replica of replicas) {
    const weight = fnv1a(`${replica}\u0000${key}`);
    if (weight > bestWeight || (weight === bestWeight && best !== undefined && replica < best)) {
      best = replica;
      bestWeight = weight;
    }
  }
  return best;
}

/** A worker URL as a NATS KV key (letters, digits, `-_=.` and `/` only). */
export function busKeyOf(url: string): string {
  return url.replace(/[^A-Za-z0-9_=.-]/g, '_').replace(/^\.+|\.+$/g, '_');
}
