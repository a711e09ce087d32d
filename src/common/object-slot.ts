/**
 * A value kept on an object itself, under a symbol of its own and not enumerable (JSON,
 * Object.keys, spreads and clones do not see it): what a WeakMap keyed by the object would
 * hold, for values made per request. V8's young-generation collector keeps the values of a
 * long-lived WeakMap alive whatever becomes of their keys, so a request's id-list text or
 * messages JSON held there outlived the request into the old generation, left for a full
 * collection (README "Worker body encoding"). On the object, the value dies with it.
 * An object that cannot take a property (frozen, sealed) keeps nothing.
 */
export class ObjectSlot<T> {
  private readonly key: symbol;

  constructor(description: string) {
    this.key = Symbol(description);
  }

  get(target: object): T | undefined {
    return (target as Record<symbol, T | undefined>)[this.key];
  }

  set(target: object, value: T): void {
    if (Object.prototype.hasOwnProperty.call(target, this.key)) {
      (target as Record<symbol, T | undefined>)[this.key] = value;
      return;
    }
    if (!Object.isExtensible(target)) return;
    Object.defineProperty(target, this.key, { value, writable: true, configurable: true, enumerable: false });
  }

  /** Forgets the value (the property stays, undefined: deleting it would slow the object down). */
  clear(target: object): void {
    if (Object.prototype.hasOwnProperty.call(target, this.key)) (target as Record<symbol, T | undefined>)[this.key] = undefined;
  }
}
