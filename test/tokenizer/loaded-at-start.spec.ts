import { afterEach, describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { acquireTokenizerThreads, PromptTokenizer, releaseTokenizerThreads } from '../../src/tokenizer';
import { request } from '../routing/support/policy-harness';
import { waitFor } from '../support/router-app';
import { fixtureDir } from './support/fixtures';

/** The shared short-text pool of model tokenizers (prompt-tokenizer.ts), as its users get it. */
const MODEL_POOL = 'model-tokenizers';

/** A copy of a fixture tokenizer's directory, so a test can take its files away. */
function copiedTokenizer(model: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'tokenizer-at-start-'));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(fixtureDir(model), f), path.join(dir, f));
  return dir;
}

/** tokenizer.json made unparsable: whatever reads it from now on throws. */
const breakTokenizerJson = (dir: string): void => writeFileSync(path.join(dir, 'tokenizer.json'), '{ not json');

const messages = [{ role: 'user', content: 'What does a KV-aware router do with a prompt it has never seen?' }];

/**
 * A configured tokenizer is loaded whole at start (README "Routing policies"): parsing
 * tokenizer.json (megabytes) on the first request's way, on the event loop for the piece cutter
 * or on a tokenizer thread, made that request and every small one behind it wait. Shown by
 * breaking tokenizer.json once the tokenizer is up: the first request must not read it.
 */
describe('a configured tokenizer is loaded at start, not by the first request', () => {
  const cleanups: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('cuts the first prompt into pieces without reading tokenizer.json again (the cutter comes from the start-up parse)', async () => {
    const dir = copiedTokenizer('llama3');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const reference = new PromptTokenizer({ tokenizer_dir: fixtureDir('llama3'), tokenizer_threads: 0 });
    cleanups.push(() => reference.close());
    const tokenizer = new PromptTokenizer({ tokenizer_dir: dir, tokenizer_threads: 0, tokenizer_cache_mb: 8 });
    cleanups.push(() => tokenizer.close());
    breakTokenizerJson(dir);
    const chat = request({ messages }, 'chat');
    const ids = await tokenizer.tokenize(chat);
    expect(ids.lists[0]?.length).toBeGreaterThan(10);
    expect(ids.lists).toEqual((await reference.tokenize(chat)).lists);
  });

  it('has the short-text tokenizer thread load the tokenizer before any request, and the first request reads no file', async () => {
    const dir = copiedTokenizer('llama3');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const tokenizer = new PromptTokenizer({ tokenizer_dir: dir, tokenizer_threads: 1, tokenizer_cache_mb: 8 });
    cleanups.push(() => tokenizer.close());
    const pool = acquireTokenizerThreads(MODEL_POOL, 1);
    cleanups.push(() => releaseTokenizerThreads(MODEL_POOL, pool));
    await waitFor(() => pool.holding(dir) === 1, 30_000, 'the tokenizer thread holds the tokenizer');
    breakTokenizerJson(dir);
    const reference = new PromptTokenizer({ tokenizer_dir: fixtureDir('llama3'), tokenizer_threads: 0 });
    cleanups.push(() => reference.close());
    const chat = request({ messages }, 'chat');
    expect((await tokenizer.tokenize(chat)).lists).toEqual((await reference.tokenize(chat)).lists);
  }, 60_000);
});
