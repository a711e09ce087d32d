import { randomUUID } from 'node:crypto';
import { isObject, type Json } from './json';
import { messageId, stopOf, usageOf, withToolUse, type AnthropicUsage, type StopReason } from './messages-response';

type BlockType = 'text' | 'thinking' | 'tool_use';

/** One upstream tool call (by its index): its block opens once it has a name and the slot is free. */
interface ToolCallState {
  id: string;
  name: string | undefined;
  /** Argument fragments that came while another block was open. */
  pending: string[];
  started: boolean;
}

function frame(type: string, data: Json): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Chat completion chunks as the Messages API's events (see
 * docs/protocol.md "Anthropic Messages API"): message_start and a ping first, then content
 * blocks one at a time (start, deltas, stop), then message_delta (stop_reason, usage) and
 * message_stop. Blocks are sequential in this API, so a tool call whose fragments arrive
 * while another block is open is buffered and gets its own block next, none of its
 * arguments lost.
 */
export class MessagesStreamReframer {
  private readonly id = messageId();
  private started = false;
  private index = -1;
  private open: BlockType | undefined;
  private openTool: string | undefined;
  private readonly tools = new Map<string, ToolCallState>();
  private unindexed = 0;
  private calledTools = false;
  private stop: { stop_reason: StopReason; stop_sequence: string | null } = { stop_reason: 'end_turn', stop_sequence: null };
  private usage: AnthropicUsage | undefined;

  constructor(private model: string) {}

  /** The events one chat chunk makes (possibly none). */
  chunk(chunk: Json): string {
    let out = '';
    if (chunk.usage) this.usage = usageOf(chunk.usage);
    if (!this.started) {
      if (typeof chunk.model === 'string' && chunk.model) this.model = chunk.model;
      out += this.start();
    }
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      if (!isObject(choice)) continue;
      const delta = isObject(choice.delta) ? choice.delta : isObject(choice.message) ? choice.message : {};
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning) out += this.ensure('thinking') + this.delta({ type: 'thinking_delta', thinking: reasoning });
      if (typeof delta.content === 'string' && delta.content) out += this.ensure('text') + this.delta({ type: 'text_delta', text: delta.content });
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isObject(call)) out += this.toolCall(call);
      if (typeof choice.finish_reason === 'string' && choice.finish_reason) this.stop = stopOf(choice.finish_reason, choice.stop_reason);
    }
    return out;
  }

  /** The closing events, once the chat stream said [DONE]. */
  finish(): string {
    let out = this.start() + this.flushPendingTools() + this.close();
    const usage = this.usage ?? usageOf(undefined);
    out += frame('message_delta', { type: 'message_delta', delta: withToolUse(this.stop, this.calledTools), usage });
    return out + frame('message_stop', { type: 'message_stop' });
  }

  /** An error event that ends a broken stream (after closing the open block). */
  error(type: string, message: string): string {
    return this.close() + frame('error', { type: 'error', error: { type, message } });
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    const usage = this.usage ? { ...this.usage, output_tokens: 0 } : usageOf(undefined);
    const message = { id: this.id, type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage };
    return frame('message_start', { type: 'message_start', message }) + frame('ping', { type: 'ping' });
  }

  private delta(delta: Json): string {
    return frame('content_block_delta', { type: 'content_block_delta', index: this.index, delta });
  }

  private close(): string {
    if (this.open === undefined) return '';
    this.open = undefined;
    this.openTool = undefined;
    return frame('content_block_stop', { type: 'content_block_stop', index: this.index });
  }

  private openBlock(type: BlockType, block: Json): string {
    const out = this.close();
    this.index++;
    this.open = type;
    return out + frame('content_block_start', { type: 'content_block_start', index: this.index, content_block: block });
  }

  private ensure(type: 'text' | 'thinking'): string {
    if (this.open === type) return '';
    // A block takes no deltas once another opens: buffered tool calls go out first.
    const out = this.flushPendingTools();
    return out + this.openBlock(type, type === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' });
  }

  private toolCall(call: Json): string {
    const fn = isObject(call.function) ? call.function : {};
    const name = typeof fn.name === 'string' && fn.name ? fn.name : undefined;
    const key = this.toolKey(call.index, name);
    if (key === undefined) return '';
    let state = this.tools.get(key);
    if (!state) {
      state = { id: typeof call.id === 'string' && call.id ? call.id : `toolu_${randomUUID().replace(/-/g, '')}`, name, pending: [], started: false };
      this.tools.set(key, state);
    } else if (!state.started) {
      // Some workers repeat id and name on every fragment: a repeat is not a new call.
      state.name ??= name;
      if (typeof call.id === 'string' && call.id) state.id = call.id;
    }
    let out = '';
    if (!state.started && state.name && this.open !== 'tool_use') out += this.openTool_(key, state);
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    if (args) {
      if (this.openTool === key) out += this.delta({ type: 'input_json_delta', partial_json: args });
      else state.pending.push(args);
    }
    return out;
  }

  /** The call a fragment belongs to: its index, else a new call when named, else the latest one. */
  private toolKey(index: unknown, name: string | undefined): string | undefined {
    if (typeof index === 'number') return String(index);
    if (name) return `unindexed-${++this.unindexed}`;
    if (this.openTool !== undefined) return this.openTool;
    let last: string | undefined;
    for (const k of this.tools.keys()) last = k;
    return last;
  }

  private openTool_(key: string, state: ToolCallState): string {
    let out = this.openBlock('tool_use', { type: 'tool_use', id: state.id, name: state.name, input: {} });
    this.openTool = key;
    this.calledTools = true;
    state.started = true;
    for (const p of state.pending.splice(0)) out += this.delta({ type: 'input_json_delta', partial_json: p });
    return out;
  }

  private flushPendingTools(): string {
    let out = '';
    for (const [key, state] of this.tools) {
      if (key === this.openTool || (state.started && state.pending.length === 0) || !state.name) continue;
      out += this.openTool_(key, state);
    }
    return out;
  }
}
