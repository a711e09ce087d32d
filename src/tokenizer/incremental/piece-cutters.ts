import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PieceCutter } from './piece-cutter';

/** One cutter per tokenizer directory for the process (it keeps only the added tokens' trie). */
const byDir = new Map<string, PieceCutter>();

/** The cutter of a Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json). */
export function pieceCutterFor(dir: string): PieceCutter {
  let cutter = byDir.get(dir);
  if (!cutter) {
    const read = (name: string): Record<string, unknown> => {
      const file = path.join(dir, name);
      return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
    };
    cutter = new PieceCutter(read('tokenizer.json'), read('tokenizer_config.json'));
    byDir.set(dir, cutter);
  }
  return cutter;
}
