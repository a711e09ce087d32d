import { describe, expect, it } from '@jest/globals';
import { scanIdList } from '../../src/common/id-list-bytes';

/** JSON's plain integer lists, as the scanner reads them: anything else goes to JSON.parse whole. */
const PLAIN_LIST = /^[ \t\n\r]*\[[ \t\n\r]*(?:0|[1-9]\d{0,14})(?:[ \t\n\r]*,[ \t\n\r]*(?:0|[1-9]\d{0,14}))*[ \t\n\r]*\]/;

/** The ids JSON.parse reads from the list at the start of the text, when it is a plain list. */
function parsedIds(text: string): number[] | undefined {
  const plain = PLAIN_LIST.exec(text);
  return plain ? (JSON.parse(plain[0]) as number[]) : undefined;
}

/** A deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const BLANKS = ['', ' ', '\n', '\t', '\r\n', '  '];
const ODD_ITEMS = ['-1', '1.5', '1e3', '01', '00', '"7"', 'null', '1234567890123456', '', '[1]', 'true', '\u00a01', '0x10'];

function generatedList(next: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
  const count = 1 + Math.floor(next() * 70);
  const items = Array.from({ length: count }, () => (next() < 0.03 ? pick(ODD_ITEMS) : String(Math.floor(next() * (next() < 0.1 ? 1e15 : 200_000)))));
  const body = items.map((item) => `${pick(BLANKS)}${item}${pick(BLANKS)}`).join(next() < 0.02 ? ',,' : ',');
  const tail = next() < 0.03 ? pick([',', ' ,', '']) : '';
  return `${pick(BLANKS)}[${body}${tail}${next() < 0.02 ? '' : ']'}`;
}

describe('token id lists read from bytes', () => {
  it('reads every plain list as JSON.parse does, and leaves every other text to it (5,000 generated lists, a third of them plain)', () => {
    let accepted = 0;
    for (let seed = 1; seed <= 5000; seed++) {
      const text = generatedList(random(seed));
      const bytes = Buffer.from(`${text}}`);
      const scanned = scanIdList(bytes, 0);
      const expected = parsedIds(text);
      expect({ seed, text, ids: scanned?.ids }).toEqual({ seed, text, ids: expected });
      if (scanned) {
        accepted++;
        expect(bytes.toString('latin1', scanned.start, scanned.end)).toBe(text.trim());
      }
    }
    // About a third are plain lists: the comparison covers both outcomes.
    expect(accepted).toBeGreaterThan(1000);
    expect(accepted).toBeLessThan(5000);
  });

  it('starts at the given offset and reports the span of the list alone', () => {
    const bytes = Buffer.from('{"prompt": [1, 2 ,3],"x":1}');
    expect(scanIdList(bytes, 10)).toEqual({ ids: [1, 2, 3], start: 11, end: 20 });
    expect(scanIdList(bytes, 0)).toBeUndefined();
    expect(scanIdList(Buffer.from(' [] '), 0)).toBeUndefined();
    expect(scanIdList(Buffer.from('[1,2'), 0)).toBeUndefined();
    expect(scanIdList(Buffer.from('[0, 10, 999999999999999]'), 0)?.ids).toEqual([0, 10, 999999999999999]);
  });

  it('reads lists longer than its reused scratch, and a short list after a long one, exactly', () => {
    const next = random(7);
    for (const length of [4096, 4097, 70_000, 3]) {
      const ids = Array.from({ length }, () => Math.floor(next() * 2 ** 40));
      const scanned = scanIdList(Buffer.from(JSON.stringify(ids)), 0);
      expect(scanned?.ids).toEqual(ids);
      expect(scanned?.ids.length).toBe(length);
    }
  });
});
