import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { ChatTemplates, type ChatTemplateInput } from '../../src/tokenizer/hf/chat-template';
import { workerChatMessages } from '../../src/tokenizer/worker-chat-messages';
import { randomChat } from './support/chat-generator';
import { FIXTURE_MODELS, fixtureChatTemplate, fixtureDir } from './support/fixtures';
import { rngOf } from './support/prompt-generator';

/**
 * The chat text the router renders is the text transformers renders on the worker, checked
 * against Python's Jinja itself (test/tokenizer/support/python_chat_template.py, set up as
 * transformers' apply_chat_template sets it up): for every fixture template, hundreds of
 * generated chats (think tags, tool responses, whitespace at the edges, unicode, tools, tool
 * calls, null content and text parts as the worker's message parsing leaves them,
 * enable_thinking) render to the same text, or fail in both. Needs
 * python3 with jinja2 (Debian's python3-jinja2, which .ci/run installs). Seeded.
 */
const CASES = Number(process.env.PYTHON_JINJA_CASES ?? 600);
const SCRIPT = path.join(process.cwd(), 'test/tokenizer/support/python_chat_template.py');

type Answer = { text: string } | { error: string };

function renderInPython(jobs: { template: string; context: Record<string, unknown> }[]): Answer[] {
  const run = spawnSync('python3', [SCRIPT], { input: JSON.stringify(jobs), encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`python3 ${SCRIPT} failed (needs python3 with jinja2: apt-get install python3-jinja2): ${run.error?.message ?? run.stderr}`);
  return JSON.parse(run.stdout) as Answer[];
}

/** The chat as the worker's message parsing hands it to the template (worker-chat-messages.ts). */
const asTheWorkerParses = (input: ChatTemplateInput): ChatTemplateInput => ({ ...input, messages: workerChatMessages(input.messages) ?? input.messages });

const withTemplates = FIXTURE_MODELS.filter((m) => fixtureChatTemplate(m) !== undefined);

describe.each(withTemplates)('chats of %s', (model) => {
  it('render as transformers renders them', () => {
    const templates = new ChatTemplates(fixtureDir(model));
    const template = fixtureChatTemplate(model)!;
    const inputs: ChatTemplateInput[] = Array.from({ length: CASES }, (_, i) => asTheWorkerParses(randomChat(rngOf(i + 1))));
    const answers = renderInPython(inputs.map((input) => ({ template, context: templates.renderContext(input) })));
    const failures: string[] = [];
    let rendered = 0;
    inputs.forEach((input, i) => {
      let ours: string;
      try {
        ours = templates.render(input);
        rendered++;
      } catch {
        ours = 'fails';
      }
      const answer = answers[i];
      const theirs = 'text' in answer ? answer.text : 'fails';
      if (ours === theirs) return;
      let at = 0;
      while (ours[at] === theirs[at]) at++;
      failures.push(`case ${i}: ${JSON.stringify(input).slice(0, 200)}\n  ours:   ...${JSON.stringify(ours.slice(Math.max(0, at - 40), at + 80))}\n  python: ...${JSON.stringify(theirs.slice(Math.max(0, at - 40), at + 80))}`);
    });
    expect(rendered).toBeGreaterThan(0);
    expect(failures.slice(0, 3)).toEqual([]);
  });
});
