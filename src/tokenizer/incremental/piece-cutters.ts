import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PieceCutter } from './piece-cutter';

/** One cutter per tokenizer directory for the process (it keeps only the added tokens' trie). */
const byDir = new Map<string, PieceCutter>();

/**
 * The cutter of a tokenizer directory from its files already parsed: a tokenizer loaded at
 * start gets its cutter then, from the same parse (tokenizer.json is megabytes: parsing it on a
 * request's way would hold up every other request, README "Tokenizer piece cache").
 */
export function pieceCutterFrom(dir: string, tokenizer: Record<string, unknown>, config: Record<string, unknown>): PieceCutter {
  let cutter = byDir.get(dir);
  if (!cutter) byDir.set(dir, (cutter = new PieceCutter(tokenizer, config)));
  return cutter;
}

/** The cutter of a Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json). */
export function pieceCutterFor(dir: string): PieceCutter {
  const cutter = byDir.get(dir);
  if (cutter) return cutter;
  const read = (name: string): Record<string, unknown> => {
    const file = path.join(dir, name);
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  };
  return pieceCutterFrom(dir, read('tokenizer.json'), read('tokenizer_config.json'));
}
