/**
 * A snapshot's body cut into parts that each fit a bus message (NATS refuses payloads over
 * its max_payload, 1 MB by default: about 45k block hashes). Every part starts with the
 * snapshot's generation and a newline, so a reader that caught a part of a newer write
 * (parts are overwritten in place) sees it and drops what it read.
 */
export function splitParts(body: Uint8Array, generation: string, partBytes: number): Uint8Array[] {
  const head = Buffer.from(`${generation}\n`);
  const size = Math.max(1, partBytes - head.length);
  const parts: Uint8Array[] = [];
  for (let at = 0; at < body.length || parts.length === 0; at += size) parts.push(Buffer.concat([head, body.subarray(at, at + size)]));
  return parts;
}

/** The body again, or undefined when a part is missing or of another generation. */
export function joinParts(parts: readonly (Uint8Array | undefined)[], generation: string): Buffer | undefined {
  const head = Buffer.from(`${generation}\n`);
  const bodies: Buffer[] = [];
  for (const part of parts) {
    if (!part || part.length < head.length || !Buffer.from(part.buffer, part.byteOffset, head.length).equals(head)) return undefined;
    bodies.push(Buffer.from(part.buffer, part.byteOffset + head.length, part.length - head.length));
  }
  return Buffer.concat(bodies);
}

/** Part size for a server's max_payload: room left for headers, at most 512 KiB. */
export function partBytesFor(maxPayload: number | undefined): number {
  return Math.max(16 * 1024, Math.min(512 * 1024, (maxPayload ?? 1024 * 1024) - 8 * 1024));
}
