import { Counter, Gauge, type Registry } from 'prom-client';
import { sharedPieceCache, type PieceCacheStats } from '../../tokenizer';

const NS = 'disagg_router_';

/**
 * The tokenizer piece cache's metrics, read from the process' cache at scrape time (its
 * counters run for the life of the process; nothing is updated per request here).
 */
export function registerTokenizerCacheMetrics(registry: Registry): void {
  const stats = (): PieceCacheStats | undefined => sharedPieceCache()?.stats;
  const counter = (name: string, help: string, labelNames: string[], read: (s: PieceCacheStats, c: Counter<string>) => void): void => {
    new Counter({
      name: NS + name,
      help,
      labelNames,
      registers: [registry],
      collect(this: Counter<string>) {
        const s = stats();
        this.reset();
        if (s) read(s, this);
      },
    });
  };
  counter('tokenizer_cache_pieces_total', 'Prompt pieces looked up in the tokenizer piece cache, by result (hit, miss)', ['result'], (s, c) => {
    c.inc({ result: 'hit' }, s.hits);
    c.inc({ result: 'miss' }, s.misses);
  });
  counter('tokenizer_cache_tokens_total', 'Prompt tokens taken from the tokenizer piece cache (hit) or encoded (miss)', ['result'], (s, c) => {
    c.inc({ result: 'hit' }, s.hitTokens);
    c.inc({ result: 'miss' }, s.missTokens);
  });
  counter('tokenizer_cache_evictions_total', 'Pieces dropped from the tokenizer piece cache to stay within its size', [], (s, c) => c.inc(s.evictions));
  counter('tokenizer_uncut_prompts_total', 'Long prompts encoded without cuts because their tokenizer cannot cut plain text (or wrap special tokens), by reason', ['reason'], (s, c) => {
    for (const [reason, n] of s.uncut) c.inc({ reason }, n);
  });
  new Gauge({
    name: NS + 'tokenizer_cache_bytes',
    help: 'Bytes held by the tokenizer piece cache (texts, ids and per-entry overhead)',
    registers: [registry],
    collect(this: Gauge<string>) {
      this.set(sharedPieceCache()?.bytes ?? 0);
    },
  });
}
