import { networkInterfaces } from 'node:os';

/**
 * disagg_request_id in TensorRT-LLM's snowflake layout, low bits first: counter (10 bits),
 * process id (6, always 0 here), node_id (8), then a millisecond timestamp. TensorRT-LLM keeps
 * 39 timestamp bits (ids up to 2^63); this router keeps 29, so ids stay below 2^53 and travel
 * as exact JSON numbers, and at least 2^40, where TensorRT-LLM's global ids start.
 */
const COUNTER_BITS = 10;
const PROCESS_BITS = 6;
const NODE_BITS = 8;
const LOW_BITS = COUNTER_BITS + PROCESS_BITS + NODE_BITS;
const MIN_GLOBAL_ID = 2 ** 40;
const TIMESTAMP_SPAN = 2 ** (53 - LOW_BITS) - MIN_GLOBAL_ID / 2 ** LOW_BITS;

let counter = 0;

export function nextDisaggRequestId(nodeId: number): number {
  counter = (counter + 1) % 2 ** COUNTER_BITS;
  const timestamp = (Date.now() % TIMESTAMP_SPAN) + MIN_GLOBAL_ID / 2 ** LOW_BITS;
  return timestamp * 2 ** LOW_BITS + nodeId * 2 ** (PROCESS_BITS + COUNTER_BITS) + counter;
}

/** The node_id field of an id. */
export function nodeIdOf(id: number): number {
  return Math.floor(id / 2 ** (PROCESS_BITS + COUNTER_BITS)) % 2 ** NODE_BITS;
}

/** TensorRT-LLM's default node_id: the host's MAC address modulo 256 (its last byte). */
export function defaultNodeId(): number {
  for (const list of Object.values(networkInterfaces())) {
    for (const nic of list ?? []) {
      if (!nic.internal && nic.mac && nic.mac !== '00:00:00:00:00:00') return parseInt(nic.mac.slice(-2), 16);
    }
  }
  return Math.floor(Math.random() * 2 ** NODE_BITS);
}
