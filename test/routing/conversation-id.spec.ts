import { describe, expect, it } from '@jest/globals';
import { CONVERSATION_ID_HEADERS, conversationIdOf, MAX_CONVERSATION_ID_CHARS } from '../../src/routing';

describe('conversation id sources and their precedence', () => {
  it('reads each source alone', () => {
    expect(conversationIdOf({ conversation_params: { conversation_id: ' body-id ' } })).toBe('body-id');
    expect(conversationIdOf({ disaggregated_params: { conversation_id: 'disagg-id' } })).toBe('disagg-id');
    expect(conversationIdOf({ disaggregated_params: { conversation_id: 42 } })).toBe('42');
    for (const name of CONVERSATION_ID_HEADERS) expect(conversationIdOf({}, { [name]: `${name}-value` })).toBe(`${name}-value`);
    expect(conversationIdOf({ prompt_cache_key: 'codex-thread' })).toBe('codex-thread');
    expect(conversationIdOf({})).toBeUndefined();
  });

  it('body conversation_params, then disaggregated_params, then headers in order, then prompt_cache_key', () => {
    const all = {
      conversation_params: { conversation_id: 'params' },
      disaggregated_params: { conversation_id: 'disagg' },
      prompt_cache_key: 'cache-key',
    };
    const headers = { 'x-correlation-id': 'correlation', 'x-session-id': 'session', 'x-session-affinity': 'affinity', 'x-multi-turn-session-id': 'multi' };
    expect(conversationIdOf(all, headers)).toBe('params');
    expect(conversationIdOf({ ...all, conversation_params: undefined }, headers)).toBe('disagg');
    expect(conversationIdOf({ prompt_cache_key: 'cache-key' }, headers)).toBe('session');
    expect(conversationIdOf({}, { 'x-session-affinity': 'affinity', 'x-multi-turn-session-id': 'multi' })).toBe('affinity');
    expect(conversationIdOf({ prompt_cache_key: 'cache-key' }, { 'x-session-id': ' ', 'x-correlation-id': '' })).toBe('cache-key');
  });

  it('treats empty, blank, zero and non-scalar values as no id', () => {
    expect(conversationIdOf({ conversation_params: { conversation_id: '  ' }, disaggregated_params: { conversation_id: 'next' } })).toBe('next');
    expect(conversationIdOf({ disaggregated_params: { conversation_id: 0 } })).toBeUndefined();
    expect(conversationIdOf({ conversation_params: { conversation_id: { nested: 1 } } })).toBeUndefined();
    expect(conversationIdOf({ conversation_params: 'not-an-object' })).toBeUndefined();
    expect(conversationIdOf({}, { 'x-session-id': ['first', 'second'] })).toBe('first');
    expect(conversationIdOf({ prompt_cache_key: '' }, {})).toBeUndefined();
  });
});

describe('conversation ids as TensorRT-LLM reads them today', () => {
  it('looks at Claude Code headers first, then the generic ones', () => {
    expect(CONVERSATION_ID_HEADERS.slice(0, 2)).toEqual(['x-claude-code-session-id', 'x-claude-session-id']);
    const headers = { 'x-session-id': 'generic', 'x-claude-session-id': 'claude', 'x-claude-code-session-id': 'claude-code' };
    expect(conversationIdOf({}, headers)).toBe('claude-code');
    expect(conversationIdOf({}, { ...headers, 'x-claude-code-session-id': ' ' })).toBe('claude');
    expect(conversationIdOf({ conversation_params: { conversation_id: 'body' } }, headers)).toBe('body');
  });

  it('keeps ids up to the limit as they are and digests longer ones, the same id to the same digest', () => {
    const atLimit = 'a'.repeat(MAX_CONVERSATION_ID_CHARS);
    expect(conversationIdOf({ prompt_cache_key: atLimit })).toBe(atLimit);
    const long = `${atLimit}b`;
    const digest = conversationIdOf({ prompt_cache_key: long });
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(conversationIdOf({ conversation_params: { conversation_id: ` ${long} ` } })).toBe(digest);
    expect(conversationIdOf({ prompt_cache_key: `${atLimit}c` })).not.toBe(digest);
  });
});
