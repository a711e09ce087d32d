import { describe, expect, it } from '@jest/globals';
import { ObjectSlot } from '../../src/common/object-slot';

describe('ObjectSlot', () => {
  const slot = new ObjectSlot<string>('test text');

  it('keeps a value per object, replaced and cleared', () => {
    const a = [1, 2, 3];
    const b = { x: 1 };
    expect(slot.get(a)).toBeUndefined();
    slot.set(a, 'first');
    slot.set(b, 'other');
    expect(slot.get(a)).toBe('first');
    expect(slot.get(b)).toBe('other');
    slot.set(a, 'second');
    expect(slot.get(a)).toBe('second');
    slot.clear(a);
    expect(slot.get(a)).toBeUndefined();
    expect(slot.get(b)).toBe('other');
  });

  it('is not seen by JSON, keys, spreads, copies or clones', () => {
    const list = [5, 6, 7];
    const body = { messages: [{ role: 'user', content: 'hi' }], n: 1 };
    slot.set(list, 'list text');
    slot.set(body, 'body text');
    slot.set(body.messages, 'messages text');
    expect(JSON.stringify(list)).toBe('[5,6,7]');
    expect(JSON.stringify(body)).toBe('{"messages":[{"role":"user","content":"hi"}],"n":1}');
    expect(Object.keys(body)).toEqual(['messages', 'n']);
    expect(Object.keys(list)).toEqual(['0', '1', '2']);
    const spread = { ...body };
    const copied = Object.assign({}, body);
    expect(slot.get(spread)).toBeUndefined();
    expect(slot.get(copied)).toBeUndefined();
    expect(slot.get([...list])).toBeUndefined();
    expect(slot.get(list.slice())).toBeUndefined();
    expect(slot.get(structuredClone(body))).toBeUndefined();
    // A copy sharing the member shares its value: the identity is the member's.
    expect(slot.get(spread.messages)).toBe('messages text');
    expect(list).toEqual([5, 6, 7]);
    expect(body).toStrictEqual({ messages: [{ role: 'user', content: 'hi' }], n: 1 });
  });

  it('keeps nothing on an object that cannot take a property, and does not throw', () => {
    const frozen = Object.freeze([1, 2]);
    const sealed = Object.seal({ a: 1 });
    expect(() => slot.set(frozen, 'x')).not.toThrow();
    expect(() => slot.set(sealed, 'y')).not.toThrow();
    expect(slot.get(frozen)).toBeUndefined();
    expect(slot.get(sealed)).toBeUndefined();
  });

  it('keeps two slots apart on one object', () => {
    const other = new ObjectSlot<number>('another');
    const target = {};
    slot.set(target, 'text');
    other.set(target, 7);
    expect(slot.get(target)).toBe('text');
    expect(other.get(target)).toBe(7);
  });
});
