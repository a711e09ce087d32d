/**
 * A deterministic multi-turn workload: conversations that each start from one of a few
 * shared system prompts and grow turn by turn (user message, then the previous answer),
 * as token ids so that every policy and worker sees exactly the same tokens.
 */
export interface WorkloadOptions {
  conversations: number;
  turns: number;
  systemPrompts: number;
  systemTokens: number;
  userTokens: number;
  answerTokens: number;
  seed: number;
}

export interface Conversation {
  id: string;
  /** The prompt of each turn. */
  turns: number[][];
}

/** xorshift32: reproducible ids without a dependency. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

export function buildWorkload(o: WorkloadOptions): Conversation[] {
  const next = rng(o.seed);
  const ids = (n: number): number[] => Array.from({ length: n }, () => 1000 + (next() % 100_000));
  const systems = Array.from({ length: o.systemPrompts }, () => ids(o.systemTokens));
  const out: Conversation[] = [];
  for (let c = 0; c < o.conversations; c++) {
    let history = [...systems[c % o.systemPrompts]];
    const turns: number[][] = [];
    for (let t = 0; t < o.turns; t++) {
      history = [...history, ...ids(o.userTokens)];
      turns.push(history);
      history = [...history, ...ids(o.answerTokens)];
    }
    out.push({ id: `conv-${c}`, turns });
  }
  // Interleave the system prompts' conversations in a shuffled order (same for every policy).
  for (let i = out.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
