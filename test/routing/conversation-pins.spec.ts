import { describe, expect, it } from '@jest/globals';
import { conversationKeyOf, ConversationPins, PIN_KEY_TOKEN_PREFIX } from '../../src/routing/policies/conversation-pins';

describe('conversation pins of kv_cache_aware', () => {
  const chat = (...contents: unknown[]) => ({ messages: contents.map((content) => ({ role: 'user', content })) });

  it('keys a chat by its first two messages and leading ids, nothing for a completion', () => {
    const key = conversationKeyOf(chat('system', 'question', 'answer'), [1, 2, 3]);
    expect(key).toBe(conversationKeyOf(chat('system', 'question', 'another later turn'), [1, 2, 3]));
    expect(key).not.toBe(conversationKeyOf(chat('system', 'other question'), [1, 2, 3]));
    expect(key).not.toBe(conversationKeyOf(chat('system', 'question'), [1, 2, 4]));
    // Contents are kept apart: moving text across the two does not give the same key.
    expect(conversationKeyOf(chat('ab', 'c'), undefined)).not.toBe(conversationKeyOf(chat('a', 'bc'), undefined));
    // Parts and missing content key too.
    expect(conversationKeyOf(chat([{ type: 'text', text: 'hi' }], null), undefined)).toEqual(expect.any(String));
    expect(conversationKeyOf({ prompt: 'text' }, [1])).toBeUndefined();
    expect(conversationKeyOf({ messages: [] }, [1])).toBeUndefined();
  });

  it('folds in only the first 256 ids, so turns that share them share the key', () => {
    const ids = Array.from({ length: PIN_KEY_TOKEN_PREFIX }, (_, i) => i);
    expect(conversationKeyOf(chat('s', 'q'), [...ids, 1])).toBe(conversationKeyOf(chat('s', 'q'), [...ids, 2, 3]));
  });

  it('remembers the last server of a conversation and drops the least recently routed past its bound', () => {
    const pins = new ConversationPins(2);
    pins.pin('a', 's1');
    pins.pin('b', 's2');
    pins.pin('a', 's3'); // a is now the most recent
    pins.pin('c', 's1');
    expect(pins.size).toBe(2);
    expect(pins.serverOf('a')).toBe('s3');
    expect(pins.serverOf('b')).toBeUndefined();
    expect(pins.serverOf('c')).toBe('s1');
  });
});
