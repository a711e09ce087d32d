import { mulberry32 } from '../../../src/simulator/seeded-random';

/**
 * The multi-turn chat workload: conversations sharing one system prompt (~1.5k tokens), each
 * turn adding a question (~400 tokens) after the previous answer (~600 tokens), so the eighth
 * turn's prompt is about 9k tokens (Qwen3 and Llama 3 count within a few percent of each
 * other on this text). Seeded: the same seed gives the same conversations.
 */
export interface ChatWorkload {
  /** The model name sent (the bench routers tokenize with a configured tokenizer_dir). */
  model: string;
  conversations: number;
  turns: number;
  seed: number;
}

export const CHAT_WORKLOAD: Omit<ChatWorkload, 'seed'> = { model: 'bench-model', conversations: 64, turns: 8 };

const SYSTEM_WORDS = 1150;
const QUESTION_WORDS = 300;
const ANSWER_WORDS = 500;

const WORDS = (
  'the router sends each request to a worker whose cache already holds most of the prompt so that prefill ' +
  'work is skipped and the first token comes sooner while decode runs on another pool of servers which ' +
  'stream tokens back through the same connection until the answer is complete a block of tokens is hashed ' +
  'and the hashes are compared with what every server reported in its events policy latency memory queue ' +
  'throughput conversation history question answer summary analysis function variable example result'
).split(' ');
const PUNCT = ['.', ',', '?', ';', ':'];

function text(rng: () => number, words: number): string {
  const out: string[] = [];
  let sentence = 0;
  for (let i = 0; i < words; i++) {
    let w = WORDS[Math.floor(rng() * WORDS.length)];
    if (sentence === 0) w = w[0].toUpperCase() + w.slice(1);
    if (rng() < 0.03) w = `${w} ${Math.floor(rng() * 10_000)}`;
    sentence++;
    if (sentence > 8 && rng() < 0.15) {
      w += PUNCT[Math.floor(rng() * PUNCT.length)];
      if (w.endsWith('.') || w.endsWith('?')) sentence = 0;
    }
    out.push(w);
  }
  return `${out.join(' ')}.`;
}

/** The shared system prompt (the same for every seed). */
const SYSTEM = text(mulberry32(1), SYSTEM_WORDS);

/**
 * Each conversation's request bodies, turn by turn: turn t holds the system prompt, t earlier
 * questions and answers, and the new question.
 */
export function chatConversations(w: ChatWorkload): string[][] {
  const rng = mulberry32(w.seed);
  const out: string[][] = [];
  for (let c = 0; c < w.conversations; c++) {
    const messages: { role: string; content: string }[] = [{ role: 'system', content: SYSTEM }];
    const bodies: string[] = [];
    for (let t = 0; t < w.turns; t++) {
      messages.push({ role: 'user', content: text(rng, QUESTION_WORDS) });
      bodies.push(JSON.stringify({ model: w.model, messages, max_tokens: 20, temperature: 0, stream: false }));
      messages.push({ role: 'assistant', content: text(rng, ANSWER_WORDS) });
    }
    out.push(bodies);
  }
  return out;
}
