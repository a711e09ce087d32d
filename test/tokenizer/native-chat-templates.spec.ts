import { describe, expect, it } from '@jest/globals';
import { ChatTemplates, type ChatTemplateInput } from '../../src/tokenizer/hf/chat-template';
import { nativeChatTemplateFor, PROBE_CHATS } from '../../src/tokenizer/hf/native-chat-templates';
import { FIXTURE_MODELS, fixtureChatTemplate, fixtureDir } from './support/fixtures';
import { randomChat } from './support/chat-generator';
import { rngOf } from './support/prompt-generator';

/**
 * The differential test of the native chat templates (README "Native chat templates"): for
 * thousands of generated chats, inside the shape a native renderer covers and outside it
 * (tools, tool calls, content parts, other template variables), the text ChatTemplates renders
 * must be Jinja's, character for character, or both must fail. Seeded: a failure names its seed.
 */
const CASES = Number(process.env.NATIVE_TEMPLATE_CASES ?? 3000);

const outcome = (templates: ChatTemplates, input: ChatTemplateInput): string => {
  try {
    return templates.render(input);
  } catch (err) {
    return `fails: ${(err as Error).constructor.name}`;
  }
};

const withNative = FIXTURE_MODELS.filter((m) => nativeChatTemplateFor(fixtureChatTemplate(m) ?? '') !== undefined);

describe.each(withNative)('chat templates of %s', (model) => {
  const dir = fixtureDir(model);
  const templates = new ChatTemplates(dir);
  const jinja = new ChatTemplates(dir, { native: false });

  it('render every generated chat as Jinja does', () => {
    const failures: string[] = [];
    for (let seed = 1; seed <= CASES; seed++) {
      const input = randomChat(rngOf(seed));
      const got = outcome(templates, input);
      if (got !== outcome(jinja, input)) failures.push(`seed ${seed}: ${JSON.stringify(input).slice(0, 300)}`);
    }
    expect(failures.slice(0, 5)).toEqual([]);
  });
});

describe('the native Qwen3 template', () => {
  const qwen3 = fixtureChatTemplate('qwen3')!;
  const jinja = new ChatTemplates(fixtureDir('qwen3'), { native: false });

  it('is known by its exact text only', () => {
    expect(withNative).toEqual(['qwen3']);
    expect(nativeChatTemplateFor(qwen3)?.name).toBe('Qwen3');
    expect(nativeChatTemplateFor(`${qwen3} `)).toBeUndefined();
    const others = FIXTURE_MODELS.filter((m) => m !== 'qwen3').map(fixtureChatTemplate);
    expect(others.filter((t) => t !== undefined).length).toBeGreaterThan(0);
    for (const other of others) if (other !== undefined) expect(nativeChatTemplateFor(other)).toBeUndefined();
  });

  it('covers most generated chats and every probe, and leaves the rest to Jinja', () => {
    const native = nativeChatTemplateFor(qwen3)!;
    let covered = 0;
    for (let seed = 1; seed <= 500; seed++) if (native.render(randomChat(rngOf(seed))) !== undefined) covered++;
    expect(covered).toBeGreaterThan(250);
    expect(covered).toBeLessThan(500);
    for (const probe of PROBE_CHATS) expect(native.render(probe)).toBe(jinja.render(probe));
    expect(native.render({ messages: [{ role: 'user', content: 'Q' }], tools: [{ type: 'function' }] })).toBeUndefined();
    expect(native.render({ messages: [{ role: 'assistant', content: 'A', tool_calls: [{ function: { name: 'f', arguments: '{}' } }] }] })).toBeUndefined();
    expect(native.render({ messages: [{ role: 'user', content: 'Q' }], continue_final_message: true, add_generation_prompt: false })).toBeUndefined();
  });
});
