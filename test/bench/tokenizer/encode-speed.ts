import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';

/**
 * Encode speed of an ~8k-token text with the JavaScript tokenizer libraries, per model:
 * @lenml/tokenizers (the simulator's), @huggingface/tokenizers (the router's) and, when its
 * install directory is given, @huggingface/transformers' AutoTokenizer.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/tokenizer/encode-speed.js \
 *     [--models=llama3,deepseek_v3,gemma3,qwen3 --rounds=20 --transformers=/path/to/node_modules/@huggingface/transformers]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const MODELS = (args.get('models') ?? 'llama2,llama3,deepseek_v3,gemma3,qwen3').split(',');
const ROUNDS = Math.min(Number(args.get('rounds') ?? 20), 200);
const req = createRequire(path.join(process.cwd(), 'package.json'));

type Encode = (text: string) => number[];
interface Candidate {
  name: string;
  load(dir: string): Promise<Encode>;
}

const readJson = (file: string): Record<string, unknown> => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;

const candidates: Candidate[] = [
  {
    name: '@lenml/tokenizers',
    load: async (dir) => {
      const { TokenizerLoader } = req('@lenml/tokenizers') as {
        TokenizerLoader: { fromPreTrained(m: object): { encode(t: string, o: object): number[] } };
      };
      const t = TokenizerLoader.fromPreTrained({ tokenizerJSON: readJson(`${dir}/tokenizer.json`), tokenizerConfig: readJson(`${dir}/tokenizer_config.json`) });
      return (text) => t.encode(text, { add_special_tokens: false });
    },
  },
  {
    name: '@huggingface/tokenizers',
    load: async (dir) => {
      const { Tokenizer } = req('@huggingface/tokenizers') as typeof import('@huggingface/tokenizers');
      const t = new Tokenizer(readJson(`${dir}/tokenizer.json`), readJson(`${dir}/tokenizer_config.json`));
      return (text) => t.encode(text, { add_special_tokens: false }).ids;
    },
  },
];
const transformersDir = args.get('transformers');
if (transformersDir) {
  candidates.push({
    name: '@huggingface/transformers',
    load: async (dir) => {
      const mod = (await import(path.join(transformersDir, 'dist/transformers.node.mjs'))) as {
        env: { allowRemoteModels: boolean; localModelPath: string };
        AutoTokenizer: { from_pretrained(id: string): Promise<{ encode(t: string, o: object): number[] }> };
      };
      mod.env.allowRemoteModels = false;
      mod.env.localModelPath = path.dirname(dir);
      const t = await mod.AutoTokenizer.from_pretrained(path.basename(dir));
      return (text) => t.encode(text, { add_special_tokens: false });
    },
  });
}

/** Mixed prose, code and non-Latin text, repeated until it is ~8k tokens for the model. */
function textOf(encode: Encode): string {
  const unit =
    'The router forwards token ids so the worker skips tokenization. ' +
    'function add(a, b) { return a + b; } // 42 + 17 = 59\n' +
    'Les modèles de langue répondent vite. 東京は日本の首都です。 Привет, мир! 🙂\n';
  let text = '';
  let i = 0;
  while (encode(text).length < 8000) text += `${unit}${i++} `;
  return text;
}

async function main(): Promise<void> {
  console.log('model\tlibrary\ttokens\tload_ms\tencode_ms_median\tencode_ms_p90');
  for (const model of MODELS) {
    const dir = path.dirname(req.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`));
    let text: string | undefined;
    for (const c of candidates) {
      const t0 = performance.now();
      const encode = await c.load(dir);
      const loadMs = performance.now() - t0;
      text ??= textOf(encode);
      const times: number[] = [];
      let tokens = 0;
      for (let r = 0; r < ROUNDS + 3; r++) {
        const s = performance.now();
        tokens = encode(text).length;
        if (r >= 3) times.push(performance.now() - s);
      }
      times.sort((a, b) => a - b);
      const q = (p: number): string => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(1);
      console.log(`${model}\t${c.name}\t${tokens}\t${loadMs.toFixed(0)}\t${q(0.5)}\t${q(0.9)}`);
    }
  }
}

void main();
