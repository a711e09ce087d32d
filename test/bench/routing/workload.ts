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

export interface TextConversation {
  id: string;
  /** Each turn as a completion prompt (a text transcript). */
  texts: string[];
  /** Each turn as chat messages (system, then user / assistant turns). */
  chats: { role: string; content: string }[][];
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

/**
 * The same shape of workload as text: words drawn from a pseudo-random vocabulary (about one
 * to two tokens each), for routers and workers that tokenize with a real tokenizer.
 */
export function buildTextWorkload(o: WorkloadOptions): TextConversation[] {
  const next = rng(o.seed);
  const syllables = ['ka', 'lo', 'mi', 'ner', 'to', 'su', 'vel', 'ra', 'qui', 'do', 'ban', 'te', 'zu', 'or', 'pel', 'sa'];
  const vocab = Array.from({ length: 4000 }, () => Array.from({ length: 1 + (next() % 3) }, () => syllables[next() % syllables.length]).join(''));
  const words = (n: number): string => Array.from({ length: n }, () => vocab[next() % vocab.length]).join(' ');
  const systems = Array.from({ length: o.systemPrompts }, () => words(Math.round(o.systemTokens / 2)));
  const out: TextConversation[] = [];
  for (let c = 0; c < o.conversations; c++) {
    const system = systems[c % o.systemPrompts];
    const messages = [{ role: 'system', content: system }];
    let transcript = system;
    const texts: string[] = [];
    const chats: { role: string; content: string }[][] = [];
    for (let t = 0; t < o.turns; t++) {
      const user = words(Math.round(o.userTokens / 2));
      messages.push({ role: 'user', content: user });
      transcript += `\n\nUser: ${user}\n\nAssistant:`;
      texts.push(transcript);
      chats.push(messages.map((m) => ({ ...m })));
      const answer = words(Math.round(o.answerTokens / 2));
      messages.push({ role: 'assistant', content: answer });
      transcript += ` ${answer}`;
    }
    out.push({ id: `conv-${c}`, texts, chats });
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
