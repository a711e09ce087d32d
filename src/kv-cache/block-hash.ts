/**
 * The v1 KV cache block key hash (`v1_block_key`) of TensorRT-LLM, bit-exact.
 *
 * The 64-bit seed is carried as two unsigned 32-bit halves in plain numbers, the parent's
 * product included, so that a block costs no BigInt arithmetic: its parent is read and its key
 * made through u64-halves. Only a cache salt's first block and the LoRA mix use BigInt.
 */

import { u64Halves as halves, u64Scratch as wide, U64_HIGH as HIGH, U64_LOW as LOW } from './u64-halves';

const HASH32_CONST = 0x45d9f3b;
const HASH64_CONST_1 = 0xbf58476d1ce4e5b9n;
const HASH64_CONST_2 = 0x94d049bb133111ebn;
const HASH_COMBINE_CONST = 0x9e3779b9;
const PARENT_HASH_CONST = 0xbf58476d1ce4e5b9n;
const TWO32 = 0x100000000;
// Module-level aliases: in vm contexts (jest) every global `Math.x` lookup in the hot loop is
// an interceptor call, ~50x slower than a captured function.
const imul = Math.imul;
const floor = Math.floor;
const min = Math.min;
const Big = BigInt;
const asUintN = BigInt.asUintN;
const toNumber = Number;

/** The name servers advertise in `/server_info` for this algorithm. */
export const V1_BLOCK_KEY_ALGO = 'v1_block_key';

/**
 * Hash of one block of token ids, chained on `parent` (0 for the first block).
 * `loraTaskId`, when given, is mixed in last, as TensorRT-LLM does for LoRA requests;
 * `cacheSaltId` (see cache-salt.ts) is mixed into a first block before its tokens.
 */
export function blockHash(tokens: ArrayLike<number>, parent: bigint = 0n, loraTaskId?: number | bigint, cacheSaltId?: bigint): bigint {
  return hashRange(tokens, 0, tokens.length, parent, loraTaskId, cacheSaltId);
}

/**
 * Block hashes of a prompt: blocks of `tokensPerBlock` over its first N-1 tokens (the last
 * token is never part of a block key), the trailing partial block included, each chained on
 * the previous block's hash. Matches TensorRT-LLM's KvCacheAwareRouter.
 */
export function blockHashChain(
  tokenIds: ArrayLike<number>,
  tokensPerBlock: number,
  loraTaskId?: number | bigint,
  cacheSaltId?: bigint,
): bigint[] {
  return extendBlockHashChain([], tokenIds, tokensPerBlock, loraTaskId, cacheSaltId);
}

/**
 * `chain`, the hashes of the prompt's first `chain.length` full blocks (as blockHashChain
 * gives them), continued in place to the prompt's end: a prompt that extends an earlier one
 * hashes only its new blocks.
 */
export function extendBlockHashChain(
  chain: bigint[],
  tokenIds: ArrayLike<number>,
  tokensPerBlock: number,
  loraTaskId?: number | bigint,
  cacheSaltId?: bigint,
): bigint[] {
  if (!Number.isInteger(tokensPerBlock) || tokensPerBlock <= 0) {
    throw new RangeError(`tokensPerBlock must be a positive integer, got ${tokensPerBlock}`);
  }
  const end = tokenIds.length - 1;
  let parent = chain.length ? chain[chain.length - 1] : 0n;
  for (let start = chain.length * tokensPerBlock; start < end; start += tokensPerBlock) {
    parent = hashRange(tokenIds, start, min(start + tokensPerBlock, end), parent, loraTaskId, cacheSaltId);
    chain.push(parent);
  }
  return chain;
}

/** PARENT_HASH_CONST's halves. */
const PARENT_HI = toNumber(PARENT_HASH_CONST >> 32n);
const PARENT_LO = toNumber(PARENT_HASH_CONST & 0xffffffffn);

/** The seed halves hashRange starts from, set by parentSeed (module state: no object per block). */
let seedHi = 0;
let seedLo = 0;

/** (block length) ^ (parent * PARENT_HASH_CONST mod 2^64), on 32-bit halves; one bigint read, none made. */
function parentSeed(parent: bigint, length: number): void {
  wide[0] = parent;
  const aHi = halves[HIGH];
  const aLo = halves[LOW];
  // aLo * PARENT_LO in full, in 16-bit limbs so every partial product is exact in a double.
  const a0 = aLo & 0xffff;
  const a1 = aLo >>> 16;
  const b0 = PARENT_LO & 0xffff;
  const b1 = PARENT_LO >>> 16;
  const mid = a0 * b1 + a1 * b0;
  const low = a0 * b0 + (mid % 0x10000) * 0x10000;
  const high = a1 * b1 + floor(mid / 0x10000) + floor(low / TWO32);
  // The cross products only reach the high half (mod 2^64).
  seedHi = (high + imul(aHi, PARENT_LO) + imul(aLo, PARENT_HI)) >>> 0;
  seedLo = ((low >>> 0) ^ length) >>> 0;
}

function hashRange(
  tokens: ArrayLike<number>,
  start: number,
  end: number,
  parent: bigint,
  loraTaskId: number | bigint | undefined,
  cacheSaltId: bigint | undefined,
): bigint {
  let hi: number;
  let lo: number;
  if (cacheSaltId !== undefined && parent === 0n) {
    const seed0 = mix64(cacheSaltId, Big(end - start));
    hi = toNumber(seed0 >> 32n);
    lo = toNumber(seed0 & 0xffffffffn);
  } else {
    parentSeed(parent, end - start);
    hi = seedHi;
    lo = seedLo;
  }
  for (let i = start; i < end; i++) {
    // 32-bit token mix, wrapping like uint32_t.
    let v = tokens[i] >>> 0;
    v = imul((v >>> 16) ^ v, HASH32_CONST) >>> 0;
    v = imul((v >>> 16) ^ v, HASH32_CONST) >>> 0;
    v = ((v >>> 16) ^ v) >>> 0;
    v = (v + HASH_COMBINE_CONST) >>> 0;
    // combined = v + (seed << 6) + (seed >> 2)  (mod 2^64), on 32-bit halves.
    const shlHi = ((hi << 6) | (lo >>> 26)) >>> 0;
    const shlLo = (lo << 6) >>> 0;
    const shrHi = hi >>> 2;
    const shrLo = ((lo >>> 2) | (hi << 30)) >>> 0;
    const loSum = v + shlLo + shrLo; // < 3 * 2^32: exact in a double
    const carry = floor(loSum / TWO32);
    const cHi = (shlHi + shrHi + carry) >>> 0;
    const cLo = loSum >>> 0;
    hi = (hi ^ cHi) >>> 0;
    lo = (lo ^ cLo) >>> 0;
  }
  halves[HIGH] = hi;
  halves[LOW] = lo;
  const seed = wide[0];
  return loraTaskId === undefined ? seed : mix64(Big(loraTaskId), seed);
}

function mix64(value: bigint, seed: bigint): bigint {
  let v = asUintN(64, value);
  v = asUintN(64, (v ^ (v >> 30n)) * HASH64_CONST_1);
  v = asUintN(64, (v ^ (v >> 27n)) * HASH64_CONST_2);
  v = v ^ (v >> 31n);
  const combined = asUintN(64, v + Big(HASH_COMBINE_CONST) + asUintN(64, seed << 6n) + (seed >> 2n));
  return asUintN(64, seed ^ combined);
}
