/**
 * A prompt's token ids as the tokenizer assembles them: an Int32Array, whose elements live off
 * the JavaScript heap (README "Worker body encoding"). A 9k-token chat turn's ids as a JS array
 * were 72 KB of the young generation per request, copied by every scavenge while the request
 * lived; here the collector moves a small header. JSON writes it as the list it is (toJSON);
 * msgpack bodies write it as a list too (msgpack-body.ts), never as binary.
 */
export class TokenIdArray extends Int32Array {
  toJSON(): number[] {
    return Array.from(this);
  }
}

/**
 * A prompt's token ids as the router passes them on: the list a client sent (a JS array) or
 * the tokenizer's TokenIdArray. Read by index, length, iteration and slice only.
 */
export type TokenIds = readonly number[] | Int32Array;
