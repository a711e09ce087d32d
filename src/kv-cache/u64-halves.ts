/**
 * A 64-bit value as two uint32 halves without bigint arithmetic (which allocates): a bigint
 * stored into u64Scratch is read as its halves from u64Halves, and halves written there read
 * back as one bigint. One scratch for every synchronous user (block hashing, block tables).
 */
export const u64Scratch = new BigUint64Array(1);
export const u64Halves = new Uint32Array(u64Scratch.buffer);
/** Where the low and the high half sit in u64Halves (so in a float64's words too): the platform's byte order. */
export const U64_LOW = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 0 : 1;
export const U64_HIGH = 1 - U64_LOW;
