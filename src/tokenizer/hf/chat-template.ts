import { isRecord } from '../../common/is-record';
import { readFileSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { Logger } from '@nestjs/common';
import { projectRequire } from '../package-resolver';
import { patchJinjaPythonStrings } from './jinja-python-strings';
import { nativeChatTemplateFor, PROBE_CHATS, type NativeChatTemplate } from './native-chat-templates';

const logger = new Logger('ChatTemplates');
let warnedUnpatched = false;
const warnUnpatchedOnce = (): void => {
  if (warnedUnpatched) return;
  warnedUnpatched = true;
  logger.warn(`this @huggingface/jinja could not be given Python's strip(chars): templates that strip given characters may render unlike transformers`);
};

interface JinjaTemplate {
  render(context: Record<string, unknown>): string;
}

/** A chat request's template inputs, as transformers' `apply_chat_template` takes them. */
export interface ChatTemplateInput {
  messages: unknown[];
  tools?: unknown;
  documents?: unknown;
  add_generation_prompt?: boolean;
  continue_final_message?: boolean;
  chat_template?: string;
  chat_template_kwargs?: Record<string, unknown>;
}

/** Thrown when a chat cannot be rendered the way transformers would (no template, template error). */
export class ChatTemplateError extends Error {}

const SPECIAL_TOKEN_KEYS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'];

/**
 * A tokenizer directory's chat template(s) and special tokens (`tokenizer_config.json`, or a
 * separate `chat_template.jinja` / `chat_template.json` as newer transformers save them),
 * rendered with @huggingface/jinja exactly as transformers' `apply_chat_template(...,
 * tokenize=False)` renders them (trim_blocks, lstrip_blocks, `raise_exception` and `strftime_now` are the engine's).
 * Only the model's own templates are compiled here (a bounded set); a request's own template
 * text goes to the sandbox (request-template-renderer.ts).
 */
export class ChatTemplates {
  private readonly templates = new Map<string, string>();
  private readonly compiled = new Map<string, JinjaTemplate>();
  /** Template text -> its checked native renderer, or null (none, or `native: false`, or it differed from Jinja). */
  private readonly natives = new Map<string, NativeChatTemplate | null>();
  private readonly specialTokens: Record<string, string> = {};

  /** `native: false` renders every chat with Jinja (the differential test's reference). */
  constructor(
    private readonly dir: string,
    private readonly options: { native?: boolean } = {},
  ) {
    const config = readJson(path.join(dir, 'tokenizer_config.json')) ?? {};
    for (const key of SPECIAL_TOKEN_KEYS) {
      const v = config[key] as unknown;
      const text = typeof v === 'string' ? v : isRecord(v) && typeof v.content === 'string' ? v.content : undefined;
      if (text !== undefined) this.specialTokens[key] = text;
    }
    this.addTemplates(config.chat_template);
    const jinja = path.join(dir, 'chat_template.jinja');
    if (existsSync(jinja)) this.templates.set('default', readFileSync(jinja, 'utf8'));
    this.addTemplates(readJson(path.join(dir, 'chat_template.json'))?.chat_template);
  }

  get hasTemplate(): boolean {
    return this.templates.size > 0;
  }

  /**
   * Whether the request brings its own template text rather than naming one of the model's:
   * that is rendered in the request-template sandbox (see RequestTemplateRenderer), never here.
   */
  isRequestTemplate(input: ChatTemplateInput): boolean {
    return typeof input.chat_template === 'string' && !this.templates.has(input.chat_template);
  }

  /** The prompt text transformers renders for this chat, with one of the model's own templates. */
  render(input: ChatTemplateInput): string {
    if (this.isRequestTemplate(input)) throw new ChatTemplateError('a request template is rendered in the sandbox only');
    const source = this.pick(input);
    const native = this.nativeFor(source)?.render(input);
    return native ?? this.renderJinja(source, input);
  }

  private renderJinja(source: string, input: ChatTemplateInput): string {
    let template = this.compiled.get(source);
    if (!template) {
      const jinja = projectRequire()('@huggingface/jinja') as { Template: new (s: string) => JinjaTemplate };
      if (!patchJinjaPythonStrings(jinja)) warnUnpatchedOnce();
      const { Template } = jinja;
      try {
        template = new Template(source);
      } catch (err) {
        throw new ChatTemplateError(`chat template: ${(err as Error).message}`);
      }
      this.compiled.set(source, template);
    }
    const context = this.renderContext(input);
    let rendered: string;
    try {
      rendered = template.render(context);
    } catch (err) {
      throw err instanceof ChatTemplateError ? err : new ChatTemplateError(`chat template: ${(err as Error).message}`);
    }
    return this.finish(rendered, input);
  }

  /** The variables a template sees: the special tokens, chat_template_kwargs and the chat. */
  renderContext(input: ChatTemplateInput): Record<string, unknown> {
    const continueFinal = input.continue_final_message === true;
    if (continueFinal && input.add_generation_prompt === true) {
      throw new ChatTemplateError('continue_final_message and add_generation_prompt are not compatible');
    }
    const context: Record<string, unknown> = {
      ...this.specialTokens,
      ...(input.chat_template_kwargs ?? {}),
      messages: input.messages,
      add_generation_prompt: continueFinal ? false : (input.add_generation_prompt ?? true),
    };
    if (input.tools != null) context.tools = input.tools;
    if (input.documents != null) context.documents = input.documents;
    return context;
  }

  /** The rendered text as transformers returns it (cut after the final message for continue_final_message). */
  finish(rendered: string, input: ChatTemplateInput): string {
    return input.continue_final_message === true ? cutAfterFinalMessage(rendered, input.messages) : rendered;
  }

  /** The template's native renderer, checked against Jinja on the probe chats before its first use. */
  private nativeFor(source: string): NativeChatTemplate | null {
    let native = this.natives.get(source);
    if (native !== undefined) return native;
    native = this.options.native === false ? null : (nativeChatTemplateFor(source) ?? null);
    if (native && PROBE_CHATS.some((chat) => !this.rendersAlike(native!, source, chat))) {
      logger.warn(`the chat template of ${this.dir} is ${native.name}'s, but its native renderer differs from Jinja on a probe chat: rendering it with Jinja`);
      native = null;
    } else if (native) {
      logger.log(`the chat template of ${this.dir} is ${native.name}'s: chats without tools are rendered natively (README "Native chat templates")`);
    }
    this.natives.set(source, native);
    return native;
  }

  private rendersAlike(native: NativeChatTemplate, source: string, chat: ChatTemplateInput): boolean {
    try {
      return native.render(chat) === this.renderJinja(source, chat);
    } catch {
      return false;
    }
  }

  private pick(input: ChatTemplateInput): string {
    if (typeof input.chat_template === 'string') return this.templates.get(input.chat_template)!;
    const hasTools = Array.isArray(input.tools) && input.tools.length > 0;
    const named = (hasTools && this.templates.get('tool_use')) || this.templates.get('default');
    if (named) return named;
    if (this.templates.size === 1) return [...this.templates.values()][0];
    throw new ChatTemplateError('the model has no chat template');
  }

  private addTemplates(value: unknown): void {
    if (typeof value === 'string') this.templates.set('default', value);
    else if (Array.isArray(value)) {
      for (const t of value) if (isRecord(t) && typeof t.name === 'string' && typeof t.template === 'string') this.templates.set(t.name, t.template);
    }
  }
}

/** transformers' continue_final_message: the text ends right after the last message's content. */
function cutAfterFinalMessage(rendered: string, messages: unknown[]): string {
  const last = messages[messages.length - 1];
  let content = isRecord(last) ? last.content : undefined;
  if (Array.isArray(content)) {
    const parts = content.filter((p): p is { text: string } => isRecord(p) && typeof p.text === 'string');
    content = parts.length ? parts[parts.length - 1].text : undefined;
  }
  if (typeof content !== 'string') throw new ChatTemplateError('continue_final_message needs a final message with text');
  const stripped = content.trim();
  const at = rendered.lastIndexOf(stripped);
  if (at < 0) throw new ChatTemplateError('continue_final_message: the final message does not appear in the rendered chat');
  const lstripped = content.replace(/^\s+/, '');
  const keep = rendered.slice(at, at + lstripped.length) === content ? lstripped.length : stripped.length;
  return rendered.slice(0, at + keep);
}

function readJson(file: string): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  return isRecord(v) ? v : undefined;
}

