export * from './block-hashes';
export * from './kv-event-applier';
export * from './kv-event-poller';
export * from './prompt-tokenizer';
export * from './prompt-tokens';
export * from './tokenizer-threads';
export * from './block-hash-trie';
export * from './fast-kv-events';
