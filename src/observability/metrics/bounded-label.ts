export const OTHER_LABEL = 'other';

/**
 * Label values that come from callers (policy names, rejection reasons): the first `max`
 * distinct well-formed values are kept, anything beyond becomes `other`, so a bug or a
 * hostile input cannot grow the series count without bound.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max || !/^[A-Za-z0-9_.:-]{1,64}$/.test(value)) return OTHER_LABEL;
    this.seen.add(value);
    return value;
  }
}
