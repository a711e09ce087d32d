import * as fs from 'node:fs';
import * as path from 'node:path';
import { Logger } from '@nestjs/common';
import { ChatTemplates } from './hf/chat-template';
import { hasTokenizerFiles, hfCachedSnapshot, hfHubCacheDir } from './hf/hf-hub-cache';
import { hfTokenizerFilesReader, hfTokenizerLoader, hfWordEncoderLoader, type HfEncoder, type WordEncoder } from './hf/hf-tokenizer-source';
import { pieceCutterFrom } from './incremental/piece-cutters';
import { projectRequire } from './package-resolver';

const logger = new Logger('ModelTokenizers');

/** A model's own Hugging Face tokenizer: its directory, chat templates and (on this thread) encoder. */
export interface ModelTokenizer {
  readonly dir: string;
  readonly templates: ChatTemplates;
  /** Encodes on this thread (loads tokenizer.json on first use). */
  encodeHere(text: string, addSpecialTokens: boolean): number[];
  /** Its model-free word encoder for this thread, loaded with it (null for a tokenizer of another shape, or when it encodes on this thread anyway). */
  wordEncoder(): WordEncoder | null;
}

/** One tokenizer per directory for the whole process, whatever router or model name uses it. */
const byDir = new Map<string, ModelTokenizer>();

/** Loads (or returns the cached) tokenizer of a directory; throws when it cannot be loaded. */
export function loadModelTokenizer(dir: string, eager = false): ModelTokenizer {
  const key = path.resolve(dir);
  let t = byDir.get(key);
  if (!t) {
    if (!hasTokenizerFiles(key)) throw new Error(`${dir} holds no tokenizer.json`);
    // Parsed once, here, so a broken file fails now, not on the first request (threads parse
    // their own copy): the piece cutter, and the word encoder of a byte-level BPE (else the
    // file is only checked), or with `eager` the whole tokenizer, all come from this parse.
    const files = hfTokenizerFilesReader()(fs, key);
    pieceCutterFrom(key, files.json, files.config);
    const words = eager ? null : hfWordEncoderLoader()(projectRequire(), fs, key, files);
    if (!eager && !words) checkTokenizerJson(path.join(key, 'tokenizer.json'), files.json);
    const templates = new ChatTemplates(key);
    let encoder: HfEncoder | undefined = eager ? hfTokenizerLoader()(projectRequire(), fs, key, files) : undefined;
    const load = (): HfEncoder => (encoder ??= hfTokenizerLoader()(projectRequire(), fs, key));
    t = {
      dir: key,
      templates,
      encodeHere: (text, special) => load().encodeFast(text, special),
      wordEncoder: () => words,
    };
    byDir.set(key, t);
  }
  return t;
}

function checkTokenizerJson(file: string, json: { model?: unknown }): void {
  if (typeof json !== 'object' || json === null || typeof json.model !== 'object') throw new Error(`${file} has no tokenizer model`);
}

/** Directories named by `tokenizer_dir` / `custom_tokenizer`: a request's `model` may name one of them. */
const configuredDirs = new Set<string>();

/** Marks a configured tokenizer directory (the router block's `tokenizer_dir`). */
export function allowConfiguredTokenizerDir(dir: string): void {
  configuredDirs.add(path.resolve(dir));
}

const MAX_MODEL_NAME_CHARS = 512;

/** Bounds of what request model names can make the router keep (README "Routing policies"). */
export const MODEL_TOKENIZER_BOUNDS = {
  /** Distinct tokenizers loaded for request models (each holds its vocabulary in memory). */
  maxLoaded: 16,
  /** Model names remembered as having no tokenizer (least recently used forgotten). */
  maxUnknown: 1024,
};

/**
 * Finds the tokenizer of a request's `model` without downloading: a configured tokenizer
 * directory the name equals, else a hub id (`ORG/NAME`) in the local Hugging Face cache. No
 * other path is opened: the model name comes from the client. Results are kept per name,
 * bounded (MODEL_TOKENIZER_BOUNDS); a model without one is logged once while remembered.
 */
export class ModelTokenizerResolver {
  private readonly found = new Map<string, ModelTokenizer>();
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly unknown = new Set<string>();
  private quiet = false;

  constructor(private readonly bounds = MODEL_TOKENIZER_BOUNDS) {}

  resolve(model: unknown): ModelTokenizer | undefined {
    const name = typeof model === 'string' ? model : '';
    // Not a name any tokenizer has: neither looked up nor kept.
    if (name.length > MAX_MODEL_NAME_CHARS) return undefined;
    const known = this.found.get(name);
    if (known) return known;
    if (this.unknown.has(name)) {
      this.unknown.delete(name);
      this.unknown.add(name);
      return undefined;
    }
    const dir = this.found.size < this.bounds.maxLoaded ? tokenizerDirOf(name) : undefined;
    let tokenizer: ModelTokenizer | undefined;
    try {
      if (dir) tokenizer = loadModelTokenizer(dir);
    } catch (err) {
      logger.warn(`the tokenizer of model "${printable(name)}" cannot be loaded: ${(err as Error).message}`);
    }
    if (tokenizer) {
      this.found.set(name, tokenizer);
      return tokenizer;
    }
    if (this.unknown.size < this.bounds.maxUnknown) {
      logger.warn(
        `no tokenizer for model "${printable(name) || '(none)'}" (neither a configured tokenizer_dir nor a hub id in the Hugging Face cache ${hfHubCacheDir()}): ` +
          'its prompts are forwarded as text and routed by load only',
      );
    } else if (!this.quiet) {
      this.quiet = true;
      logger.warn(`more than ${this.bounds.maxUnknown} model names without a tokenizer: the next ones are not logged`);
    }
    this.unknown.add(name);
    if (this.unknown.size > this.bounds.maxUnknown) this.unknown.delete(this.unknown.values().next().value!);
    return undefined;
  }

  /** Names remembered, found or not (for tests). */
  get size(): { found: number; unknown: number } {
    return { found: this.found.size, unknown: this.unknown.size };
  }
}

/** The directory a model name may stand for: a configured one, or a validated hub id's cached snapshot. */
function tokenizerDirOf(name: string): string | undefined {
  if (!name) return undefined;
  if (configuredDirs.size > 0 && configuredDirs.has(path.resolve(name))) return path.resolve(name);
  return hfCachedSnapshot(name);
}

/** A name as it goes into a log line: short, without control characters. */
function printable(name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f]/g, '?');
  return clean.length > 200 ? `${clean.slice(0, 200)}...` : clean;
}
