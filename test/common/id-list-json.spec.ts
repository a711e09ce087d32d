import { describe, expect, it } from '@jest/globals';
import { IdListJson, idListJsonOf, idListMembers, idListTextOf, isRememberedIdList, rememberIdListJson } from '../../src/common/id-list-text';

/** Id lists as the tokenizer's pieces make them: members written digit by digit, joined only when read as text. */
describe('id list JSON', () => {
  it('writes the members of any int32 ids as the typed array joins them', () => {
    const edges = [0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 151_642, 999_999_999, 1_000_000_000, 2_147_483_647, -1, -10, -2_147_483_648];
    expect(idListMembers(Int32Array.from(edges))).toBe(edges.join(','));
    expect(idListMembers(new Int32Array(0))).toBe('');
    // Longer than the scratch it started with, then short again: the scratch grows and is reused.
    const many = Int32Array.from({ length: 20_000 }, (_, i) => (i * 7919) % 160_000);
    expect(idListMembers(many)).toBe(many.join(','));
    expect(idListMembers(Int32Array.of(42))).toBe('42');
  });

  it('reads and writes a list of members as the text it spells', () => {
    const json = IdListJson.ofMembers(['1,2,3', '4', '5,6']);
    expect(json.text).toBe('[1,2,3,4,5,6]');
    expect(json.chars).toBe(json.text.length);
    const out = Buffer.alloc(json.chars + 4, 0x20);
    expect(json.writeInto(out, 2)).toBe(2 + json.chars);
    expect(out.toString('latin1')).toBe(`  ${json.text}  `);
  });

  it('writes a text as it came', () => {
    const json = IdListJson.ofText('[ 1 , 2 ]');
    expect(json.chars).toBe(9);
    const out = Buffer.alloc(json.chars);
    expect(json.writeInto(out, 0)).toBe(9);
    expect(out.toString('latin1')).toBe('[ 1 , 2 ]');
  });

  it('remembers a list only while its length and ends are unchanged', () => {
    const ids = Array.from({ length: 100 }, (_, i) => i);
    rememberIdListJson(ids, IdListJson.ofMembers([ids.slice(0, 50).join(','), ids.slice(50).join(',')]));
    expect(idListTextOf(ids)).toBe(JSON.stringify(ids));
    ids.push(7);
    expect(idListJsonOf(ids)).toBeUndefined();
  });

  it('vouches for a remembered list only, and only while it is unchanged', () => {
    const ids = Array.from({ length: 80 }, (_, i) => i + 1);
    expect(isRememberedIdList(ids)).toBe(false);
    expect(isRememberedIdList([...ids])).toBe(false);
    rememberIdListJson(ids, IdListJson.ofText(JSON.stringify(ids)));
    expect(isRememberedIdList(ids)).toBe(true);
    expect(isRememberedIdList([...ids])).toBe(false);
    ids[ids.length - 1] = -1;
    expect(isRememberedIdList(ids)).toBe(false);
  });
});
