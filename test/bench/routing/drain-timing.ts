/** A /kv_cache_events drain of one stored event of `blocks` blocks (the hostile bench's shape). */
export function drainOf(blocks: number): string {
  const parts = ['[{"event_id":1,"data":{"type":"stored","parent_hash":null,"blocks":['];
  for (let i = 1; i <= blocks; i++) parts.push(`${i > 1 ? ',' : ''}{"type":"stored_block","block_hash":${i},"tokens":[]}`);
  parts.push(']},"window_size":32}]');
  return parts.join('');
}

/**
 * What a TensorRT-LLM worker drains after a `tokens`-token prompt: one stored event, a block per
 * `tokensPerBlock` tokens, each with its per-token objects (docs/protocol.md, "KV cache events").
 */
export function promptDrainOf(tokens: number, tokensPerBlock: number): string {
  const parts = ['[{"event_id":1,"data":{"type":"stored","parent_hash":null,"blocks":['];
  let t = 0;
  for (let b = 0; b < Math.floor(tokens / tokensPerBlock); b++) {
    const list: string[] = [];
    for (let i = 0; i < tokensPerBlock; i++, t++) list.push(`{"type":"unique_token","token_id":${(t * 7919) % 151_000},"token_extra_id":0}`);
    const hash = (BigInt(b + 1) * 12809241085271551977n) % 18446744073709551615n;
    parts.push(`${b ? ',' : ''}{"type":"stored_block","block_hash":${hash},"tokens":[${list.join(',')}],"lora_id":null,"cache_level":0,"priority":35}`);
  }
  parts.push(']},"window_size":32}]');
  return parts.join('');
}

/** Runs `work` with a turn counter beside it: total ms, turns seen, longest gap ms. */
export async function timed(work: () => unknown): Promise<{ ms: number; turns: number; maxGapMs: number }> {
  let turns = 0;
  let maxGapMs = 0;
  let running = true;
  const started = performance.now();
  let last = started;
  const tick = (): void => {
    if (!running) return;
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  const ms = performance.now() - started;
  return { ms: Math.round(ms), turns, maxGapMs: Math.round(Math.max(maxGapMs, performance.now() - last)) };
}
