import { describe, expect, it } from '@jest/globals';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { PieceCache, printOf } from '../../src/tokenizer/incremental/piece-cache';

/** A full collection, for a test that asserts what memory stays held. */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

/** Texts of one length that differ only at a character the print does not read: one print, many texts. */
function samePrintTexts(count: number): string[] {
  const base = 'a'.repeat(1000);
  // 1000 characters: the print reads every 31st and the last 8, so position 1 is never read.
  return Array.from({ length: count }, (_, i) => base.slice(0, 1) + String.fromCharCode(0x4e00 + i) + base.slice(2));
}

const ids = (...n: number[]): Int32Array => Int32Array.from(n);

describe('PieceCache', () => {
  it('keeps texts that share a print apart, each with its own ids', () => {
    const texts = samePrintTexts(3);
    expect(new Set(texts.map(printOf)).size).toBe(1);
    const cache = new PieceCache(1 << 20);
    texts.forEach((t, i) => cache.set('tok', t, ids(i, i + 10)));
    texts.forEach((t, i) => expect(Array.from(cache.get('tok', t)?.ids ?? [])).toEqual([i, i + 10]));
    expect(cache.get('tok', texts[0].replace('a', 'b'))).toBeUndefined();
    expect(cache.entries).toBe(3);
  });

  it('keeps one text under two tokenizers apart', () => {
    const cache = new PieceCache(1 << 20);
    cache.set('llama', 'hello world', ids(1, 2));
    cache.set('qwen', 'hello world', ids(7));
    expect(cache.get('llama', 'hello world')?.json).toBe('1,2');
    expect(cache.get('qwen', 'hello world')?.json).toBe('7');
    expect(cache.get('gemma', 'hello world')).toBeUndefined();
  });

  it('refuses a text past the chain bound, so crafted texts cannot make look-ups long', () => {
    const texts = samePrintTexts(9);
    const cache = new PieceCache(1 << 20);
    texts.forEach((t, i) => cache.set('tok', t, ids(i)));
    expect(cache.entries).toBe(8);
    expect(cache.get('tok', texts[8])).toBeUndefined();
    expect(cache.get('tok', texts[7])?.json).toBe('7');
  });

  it('holds a slice of a prompt as a copy of its own, the bytes held within the bound', () => {
    const prompt = 'x'.repeat(4000) + 'the piece' + 'y'.repeat(4000);
    const piece = prompt.slice(4000, 4009);
    const cache = new PieceCache(4096);
    cache.set('tok', piece, ids(5, 6));
    expect(cache.get('tok', 'the piece')?.json).toBe('5,6');
    for (let i = 0; i < 200; i++) cache.set('tok', `piece number ${i}`, ids(i));
    expect(cache.bytes).toBeLessThanOrEqual(4096);
    expect(cache.stats.evictions).toBeGreaterThan(0);
  });

  it('keeps no prompt alive through the pieces it holds', () => {
    const cache = new PieceCache(1 << 20);
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    // 20 prompts of 5 MB each: a piece that were a slice of its prompt would hold 100 MB.
    for (let i = 0; i < 20; i++) cache.set('tok', `${'x'.repeat(5_000_000)}:${i}`.slice(-200), ids(i));
    collectGarbage();
    expect(cache.entries).toBe(20);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(20_000_000);
  });

  it('drops the least recently used first: a hit moves a piece to the back', () => {
    const perEntry = 'p0'.length * 2 + 4 + 1 + 160;
    const cache = new PieceCache(perEntry * 3);
    ['p0', 'p1', 'p2'].forEach((t, i) => cache.set('tok', t, ids(i)));
    expect(cache.get('tok', 'p0')).toBeDefined();
    cache.set('tok', 'p3', ids(3));
    expect(cache.get('tok', 'p1')).toBeUndefined();
    expect(cache.get('tok', 'p0')?.json).toBe('0');
    expect(cache.get('tok', 'p3')?.json).toBe('3');
  });

  it('keeps a piece used between every insertion while the others go oldest first', () => {
    const perEntry = 'p000'.length * 2 + 4 + 4 + 160;
    const cache = new PieceCache(perEntry * 100);
    const name = (i: number): string => `p${String(i).padStart(3, '0')}`;
    for (let i = 0; i < 100; i++) cache.set('tok', name(i), ids(1000 + i));
    for (let i = 100; i < 300; i++) {
      expect(cache.get('tok', 'p000')?.json).toBe('1000');
      cache.set('tok', name(i), ids(1000 + i));
    }
    expect(cache.entries).toBe(100);
    // The newest 99 and the hot one: every other piece went, oldest first.
    expect(cache.get('tok', name(200))).toBeUndefined();
    for (let i = 201; i < 300; i++) expect(cache.get('tok', name(i))?.json).toBe(String(1000 + i));
  });
});
