import * as fs from 'node:fs';
import * as path from 'node:path';
import { Logger } from '@nestjs/common';
import { ChatTemplates } from './hf/chat-template';
import { hasTokenizerFiles, hfCachedSnapshot, hfHubCacheDir } from './hf/hf-hub-cache';
import { hfTokenizerLoader, type HfEncoder } from './hf/hf-tokenizer-source';
import { projectRequire } from './package-resolver';

const logger = new Logger('ModelTokenizers');

/** A model's own Hugging Face tokenizer: its directory, chat templates and (on this thread) encoder. */
export interface ModelTokenizer {
  readonly dir: string;
  readonly templates: ChatTemplates;
  /** Encodes on this thread (loads tokenizer.json on first use). */
  encodeHere(text: string, addSpecialTokens: boolean): number[];
}

/** One tokenizer per directory for the whole process, whatever router or model name uses it. */
const byDir = new Map<string, ModelTokenizer>();

/** Loads (or returns the cached) tokenizer of a directory; throws when it cannot be loaded. */
export function loadModelTokenizer(dir: string, eager = false): ModelTokenizer {
  const key = path.resolve(dir);
  let t = byDir.get(key);
  if (!t) {
    if (!hasTokenizerFiles(key)) throw new Error(`${dir} holds no tokenizer.json`);
    // Parsed once here so a broken file fails now, not on the first request (threads parse their own copy).
    if (!eager) checkTokenizerJson(path.join(key, 'tokenizer.json'));
    const templates = new ChatTemplates(key);
    let encoder: HfEncoder | undefined;
    const load = (): HfEncoder => (encoder ??= hfTokenizerLoader()(projectRequire(), fs, key));
    if (eager) load();
    t = { dir: key, templates, encodeHere: (text, special) => load().encode(text, special) };
    byDir.set(key, t);
  }
  return t;
}

function checkTokenizerJson(file: string): void {
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as { model?: unknown };
  if (typeof json !== 'object' || json === null || typeof json.model !== 'object') throw new Error(`${file} has no tokenizer model`);
}

/**
 * Finds the tokenizer of a request's `model` as TensorRT-LLM's router does without
 * downloading: the model name as a local directory, then as a hub id in the local Hugging Face
 * cache. Results, found or not, are kept per model name; a model without one is logged once.
 */
export class ModelTokenizerResolver {
  private readonly byModel = new Map<string, ModelTokenizer | null>();

  resolve(model: unknown): ModelTokenizer | undefined {
    const name = typeof model === 'string' ? model : '';
    const known = this.byModel.get(name);
    if (known !== undefined) return known ?? undefined;
    let found: ModelTokenizer | null = null;
    try {
      const dir = name && hasTokenizerFiles(name) ? name : name ? hfCachedSnapshot(name) : undefined;
      if (dir) found = loadModelTokenizer(dir);
    } catch (err) {
      logger.warn(`the tokenizer of model "${name}" cannot be loaded: ${(err as Error).message}`);
    }
    if (!found) {
      logger.warn(
        `no tokenizer for model "${name || '(none)'}" (neither a local directory nor in the Hugging Face cache ${hfHubCacheDir()}): ` +
          'its prompts are forwarded as text and routed by load only',
      );
    }
    this.byModel.set(name, found);
    return found ?? undefined;
  }
}
