import { createHash } from 'node:crypto';
import { LazyRecency } from '../../common/lazy-recency';
import { ObjectSlot } from '../../common/object-slot';
import { OldestFirst } from '../../common/oldest-first';
import type { TokenIds } from '../../common/token-id-array';

/** Conversations whose server is remembered, least recently routed dropped first (TensorRT-LLM's bound). */
export const CONVERSATION_PIN_CAPACITY = 50_000;
/** Leading prompt token ids folded into the key, so chats sent as ids (placeholder content) still key apart. */
export const PIN_KEY_TOKEN_PREFIX = 256;
/** Messages whose content keys a conversation: the system prompt and the first question, as TensorRT-LLM. */
const KEY_MESSAGES = 2;
/** Characters of a content hashed, at most (with its length): a 16 MB message costs the event loop no more than a long prompt. */
const KEY_CONTENT_CHARS = 1 << 20;

/** The key of a body already keyed (by the other pool's router on the same request), with the ids it folded in. */
const keyed = new ObjectSlot<{ ids: TokenIds | undefined; key: string }>('conversation key');

/**
 * The conversation a chat belongs to, without an id from the client (docs/protocol.md
 * "KV-aware scoring"): the content of its first two messages and its first 256 prompt token
 * ids, which every later turn repeats. A digest, so a long system prompt costs the table 44
 * bytes. Undefined for a body without messages (completions), which is never pinned.
 */
export function conversationKeyOf(body: Readonly<Record<string, unknown>>, tokenIds: TokenIds | undefined): string | undefined {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return undefined;
  const known = keyed.get(body);
  if (known && known.ids === tokenIds) return known.key;
  const key = computeKey(messages, tokenIds);
  keyed.set(body, { ids: tokenIds, key });
  return key;
}

function computeKey(messages: readonly unknown[], tokenIds: TokenIds | undefined): string {
  const hash = createHash('sha256');
  for (const message of messages.slice(0, KEY_MESSAGES)) {
    const content = typeof message === 'object' && message !== null ? (message as Record<string, unknown>).content : undefined;
    const text = typeof content === 'string' ? content : (JSON.stringify(content ?? null) ?? '');
    // The length closes each content: "ab" + "c" never keys as "a" + "bc".
    hash.update(text.length > KEY_CONTENT_CHARS ? text.slice(0, KEY_CONTENT_CHARS) : text).update(`\u0000${text.length}\u0000`);
  }
  // As doubles, not a joined text: joining 256 numbers cost as much as hashing 9 KB of content.
  if (tokenIds?.length) hash.update(new Uint8Array(Float64Array.from(tokenIds.slice(0, PIN_KEY_TOKEN_PREFIX)).buffer));
  return hash.digest('base64');
}

/**
 * Which server each conversation was last routed to, bounded in count: the KV-aware policy
 * sends a conversation's next turn there while that server is a candidate under its load cap,
 * so a worker that evicted some of its blocks does not scatter the conversation.
 */
export class ConversationPins {
  private readonly pins = new Map<string, { serverId: string; stamp: number }>();
  private readonly recency = new LazyRecency();
  private readonly oldest = new OldestFirst(() => this.pins.keys());

  constructor(private readonly capacity = CONVERSATION_PIN_CAPACITY) {}

  get size(): number {
    return this.pins.size;
  }

  /** The server id the conversation was last routed to. */
  serverOf(key: string): string | undefined {
    return this.pins.get(key)?.serverId;
  }

  /** Records the route, the conversation becoming the most recent (lazily: see LazyRecency). */
  pin(key: string, serverId: string): void {
    const pinned = this.pins.get(key);
    if (pinned && !this.recency.due(pinned.stamp, this.pins.size)) {
      pinned.serverId = serverId;
      return;
    }
    if (pinned) this.pins.delete(key);
    this.pins.set(key, { serverId, stamp: this.recency.next() });
    if (this.pins.size <= this.capacity) return;
    const oldest = this.oldest.take();
    if (oldest !== undefined) this.pins.delete(oldest);
  }
}
