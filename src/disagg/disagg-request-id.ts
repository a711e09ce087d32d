import { randomInt } from 'node:crypto';

/**
 * disagg_request_id is an integer in TensorRT-LLM. A random start keeps ids from two router
 * replicas (or restarts) apart; increments stay below 2^53 so JSON carries them exactly.
 */
let next = randomInt(1, 2 ** 40) * 1024;

export function nextDisaggRequestId(): number {
  next += 1;
  if (next >= Number.MAX_SAFE_INTEGER) next = 1;
  return next;
}
