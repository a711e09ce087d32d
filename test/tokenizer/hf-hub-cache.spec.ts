import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { hfCachedSnapshot, hfHubCacheDir } from '../../src/tokenizer/hf/hf-hub-cache';

describe('the local Hugging Face cache', () => {
  it('is HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub', () => {
    expect(hfHubCacheDir({ HF_HUB_CACHE: '/a', HF_HOME: '/b' })).toBe('/a');
    expect(hfHubCacheDir({ HF_HOME: '/b' })).toBe(path.join('/b', 'hub'));
    expect(hfHubCacheDir({})).toBe(path.join(os.homedir(), '.cache', 'huggingface', 'hub'));
  });

  it('finds the snapshot refs/main names, only with a tokenizer.json, and never outside the cache', () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'hf-cache-'));
    try {
      const repo = path.join(cache, 'models--org--name');
      mkdirSync(path.join(repo, 'refs'), { recursive: true });
      mkdirSync(path.join(repo, 'snapshots', 'rev1'), { recursive: true });
      mkdirSync(path.join(repo, 'snapshots', 'rev2'), { recursive: true });
      writeFileSync(path.join(repo, 'snapshots', 'rev1', 'tokenizer.json'), '{}');
      writeFileSync(path.join(repo, 'refs', 'main'), 'rev2\n');
      expect(hfCachedSnapshot('org/name', cache)).toBeUndefined();
      writeFileSync(path.join(repo, 'refs', 'main'), 'rev1\n');
      expect(hfCachedSnapshot('org/name', cache)).toBe(path.join(repo, 'snapshots', 'rev1'));
      expect(hfCachedSnapshot('org/other', cache)).toBeUndefined();
      for (const bad of ['../org/name', 'org/../name', 'name', 'a/b/c']) expect(hfCachedSnapshot(bad, cache)).toBeUndefined();
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
