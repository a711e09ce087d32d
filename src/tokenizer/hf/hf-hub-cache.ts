import { existsSync, readFileSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The local Hugging Face hub cache, as huggingface_hub finds it: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub. */
export function hfHubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return path.join(env.HF_HOME, 'hub');
  return path.join(os.homedir(), '.cache', 'huggingface', 'hub');
}

/**
 * A hub id as the Hub allows them: `ORG/NAME`, each part starting with a letter or digit, at
 * most 96 characters, no `--` or `..` (so it cannot climb out of the cache or alias another repo).
 */
const HUB_ID = /^[A-Za-z0-9][\w.-]{0,95}\/[A-Za-z0-9][\w.-]{0,95}$/;

/**
 * The snapshot directory of a hub model in the cache (`models--ORG--NAME/snapshots/REV`,
 * REV read from `refs/main`) when it holds a `tokenizer.json`; nothing is ever downloaded.
 */
export function hfCachedSnapshot(modelId: string, cacheDir = hfHubCacheDir()): string | undefined {
  if (!HUB_ID.test(modelId) || modelId.includes('..') || modelId.includes('--')) return undefined;
  const repo = path.join(cacheDir, `models--${modelId.replace('/', '--')}`);
  const ref = path.join(repo, 'refs', 'main');
  if (!existsSync(ref)) return undefined;
  const rev = readFileSync(ref, 'utf8').trim();
  if (!/^[\w.-]+$/.test(rev)) return undefined;
  const snapshot = path.join(repo, 'snapshots', rev);
  return hasTokenizerFiles(snapshot) ? snapshot : undefined;
}

/** Whether a directory holds a Hugging Face `tokenizer.json`. */
export function hasTokenizerFiles(dir: string): boolean {
  try {
    return statSync(dir).isDirectory() && existsSync(path.join(dir, 'tokenizer.json'));
  } catch {
    return false;
  }
}
