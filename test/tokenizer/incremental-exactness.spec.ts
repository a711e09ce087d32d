import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChatTemplates } from '../../src/tokenizer/hf/chat-template';
import { hfTokenizerLoader } from '../../src/tokenizer/hf/hf-tokenizer-source';
import { idListTextOf, MIN_SPLICED_IDS } from '../../src/common/id-list-text';
import { IncrementalEncoder, PieceCache, PieceCutter } from '../../src/tokenizer/incremental';
import { projectRequire } from '../../src/tokenizer/package-resolver';
import { FIXTURE_MODELS, fixtureDir } from './support/fixtures';
import { int, pick, randomConversation, randomText, rngOf, type Message } from './support/prompt-generator';

/**
 * The differential test of incremental tokenization: thousands of generated prompts (unicode,
 * code, whitespace runs, text ending mid-word, chats growing turn by turn, edits in the middle of
 * the history, system prompt swaps) encoded through the piece cache must give the ids of the
 * uncached encode of the whole text, for every fixture tokenizer. Pieces are cut far finer than
 * in production (every 24 characters where plain text may be cut) and the cache is small, so
 * cuts, hits and evictions all happen often. The JSON text joined from the pieces' (what a
 * worker body splices in) must be that of the ids. Seeded: a failure names its seed.
 */
const CONVERSATIONS = Number(process.env.INCREMENTAL_TOKENIZER_CASES ?? 60);
const TEXT_PROMPTS = CONVERSATIONS;
const readJson = (dir: string, name: string): Record<string, unknown> => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as Record<string, unknown>;

/** Llama 2's chat layout, for the fixture that ships no template. */
function llama2Chat(messages: Message[]): string {
  const system = messages[0]?.role === 'system' ? messages[0].content : undefined;
  const rest = system === undefined ? messages : messages.slice(1);
  let out = '';
  rest.forEach((m, i) => {
    if (m.role === 'user') out += `<s>[INST] ${i === 0 && system !== undefined ? `<<SYS>>\n${system}\n<</SYS>>\n\n` : ''}${m.content.trim()} [/INST]`;
    else out += ` ${m.content.trim()} </s>`;
  });
  return out;
}

describe.each(FIXTURE_MODELS)('incremental tokenization of %s equals the uncached encode', (model) => {
  const dir = fixtureDir(model);
  const json = readJson(dir, 'tokenizer.json');
  const config = readJson(dir, 'tokenizer_config.json');
  const hf = hfTokenizerLoader()(projectRequire(), fs, dir);
  const templates = new ChatTemplates(dir);
  const specials = ((json.added_tokens ?? []) as { content: string; special: boolean }[]).filter((t) => t.special).map((t) => t.content).slice(0, 40);
  const render = (messages: Message[]): string => (templates.hasTemplate ? templates.render({ messages, add_generation_prompt: true }) : llama2Chat(messages));

  const cache = new PieceCache(256 * 1024);
  const encoder = new IncrementalEncoder(dir, new PieceCutter(json, config, 24), cache, {
    encode: (text, special) => hf.encode(text, special),
    encodePieces: (texts) => texts.map((t) => Int32Array.from(hf.encodePiece(t))),
  });
  const failures: string[] = [];
  let checked = 0;
  let spliced = 0;
  const check = async (seed: number, what: string, text: string, special: boolean): Promise<void> => {
    checked++;
    const whole = hf.encode(text, special);
    const pieces = await encoder.encode(text, special);
    if (whole.length !== pieces.length || whole.some((id, i) => id !== pieces[i])) failures.push(`seed ${seed} ${what}: ${JSON.stringify(text.slice(0, 200))}`);
    if (pieces.length >= MIN_SPLICED_IDS) {
      spliced++;
      if (idListTextOf(pieces) !== JSON.stringify(whole)) failures.push(`seed ${seed} ${what}: the joined JSON text differs`);
    }
  };

  it('is cut where the tokenizer allows', () => {
    const cutter = new PieceCutter(json, config);
    expect(cutter.textProblem === undefined).toBe(['llama3', 'deepseek_v3', 'qwen3'].includes(model));
    expect(cutter.cutsAtTokens).toBe(true);
  });

  it('for chats growing turn by turn, edited in the middle, with the system prompt swapped', async () => {
    for (let seed = 1; seed <= CONVERSATIONS; seed++) {
      const rng = rngOf(seed * 7919 + model.length);
      const system = rng() < 0.8 ? randomText(rng, int(rng, 5, 80)) : undefined;
      const steps = randomConversation(rng, int(rng, 2, 6), system);
      for (const [turn, messages] of steps.entries()) await check(seed, `turn ${turn}`, render(messages), false);
      const last = steps[steps.length - 1];
      const edited = last.map((m) => ({ ...m }));
      const at = int(rng, 0, edited.length - 1);
      edited[at].content = `${edited[at].content.slice(0, int(rng, 0, edited[at].content.length))}${randomText(rng, int(rng, 1, 8))}`;
      await check(seed, `edit of message ${at}`, render(edited), false);
      if (system !== undefined) await check(seed, 'system swap', render([{ role: 'system', content: randomText(rng, int(rng, 5, 40)) }, ...last.slice(1)]), false);
      await check(seed, 'with special tokens added', render(last), true);
    }
    expect(failures).toEqual([]);
    expect(cache.stats.hits).toBeGreaterThan(0);
    expect(spliced).toBeGreaterThan(CONVERSATIONS);
  }, 60_000);

  it('for plain text prompts growing (mid-word too) and edited, special tokens added or not', async () => {
    for (let seed = 1; seed <= TEXT_PROMPTS; seed++) {
      const rng = rngOf(seed * 104729 + model.length);
      let text = randomText(rng, int(rng, 10, 80), specials);
      const special = rng() < 0.7;
      for (let step = 0; step < 4; step++) {
        await check(seed, `step ${step}`, text, special);
        // The next prompt continues this one, now and then right inside its last word.
        text += (rng() < 0.3 ? '' : pick(rng, [' ', '\n', ''])) + randomText(rng, int(rng, 1, 30), specials);
      }
      const at = int(rng, 0, text.length);
      await check(seed, 'edit', `${text.slice(0, at)}${randomText(rng, 3)}${text.slice(at)}`, special);
    }
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(TEXT_PROMPTS * 5);
  }, 60_000);
});
