import { OTHER_LABEL } from './bounded-label';

/** Label values as the request path has them: numbers (statuses) become text once per tuple. */
export type LabelValue = string | number;
export type Labels = Readonly<Record<string, string>>;

/** Default cap on the label tuples of one metric. */
export const MAX_LABEL_TUPLES = 1024;

/** Up to four labels: the key is built from positional values, with no array or object per call. */
export const MAX_LABEL_NAMES = 4;

const SEP = '\u0001';

/**
 * The series ("cells") of one metric by their label values. A tuple's cell is created the
 * first time it is seen; past `maxTuples` distinct tuples, new ones all share the cell whose
 * labels are all `other`, so a bug or a hostile input cannot grow memory without bound.
 */
export class LabelCells<C extends { readonly labels: Labels }> {
  private byKey = new Map<string, C>();
  private readonly arity: number;
  private readonly overflowKey: string;

  constructor(
    private readonly labelNames: readonly string[],
    private readonly create: (labels: Labels) => C,
    private readonly maxTuples = MAX_LABEL_TUPLES,
  ) {
    if (labelNames.length > MAX_LABEL_NAMES) throw new Error(`at most ${MAX_LABEL_NAMES} labels, got ${labelNames.join(', ')}`);
    this.arity = labelNames.length;
    this.overflowKey = labelNames.map(() => OTHER_LABEL).join(SEP);
  }

  /** The cell of the values `a`..`d`, in label-name order (unused ones left out). */
  get(a: LabelValue = '', b: LabelValue = '', c: LabelValue = '', d: LabelValue = ''): C {
    const key = this.keyOf(a, b, c, d);
    const cell = this.byKey.get(key);
    return cell ?? this.add(key, a, b, c, d);
  }

  /** Every cell, in the order their tuples first appeared (as prom-client lists series). */
  values(): IterableIterator<C> {
    return this.byKey.values();
  }

  /** Drops the cells whose labels match; holders of a dropped cell must look it up again. */
  removeWhere(matches: (labels: Labels) => boolean): void {
    for (const [key, cell] of this.byKey) if (matches(cell.labels)) this.byKey.delete(key);
  }

  clear(): void {
    this.byKey = new Map();
  }

  private keyOf(a: LabelValue, b: LabelValue, c: LabelValue, d: LabelValue): string {
    switch (this.arity) {
      case 0:
        return '';
      case 1:
        return `${a}`;
      case 2:
        return `${a}${SEP}${b}`;
      case 3:
        return `${a}${SEP}${b}${SEP}${c}`;
      default:
        return `${a}${SEP}${b}${SEP}${c}${SEP}${d}`;
    }
  }

  private add(key: string, ...values: LabelValue[]): C {
    const overflow = this.byKey.size >= this.maxTuples;
    if (overflow) {
      const shared = this.byKey.get(this.overflowKey);
      if (shared) return shared;
      key = this.overflowKey;
    }
    const labels: Record<string, string> = {};
    this.labelNames.forEach((name, i) => (labels[name] = overflow ? OTHER_LABEL : String(values[i])));
    const cell = this.create(labels);
    this.byKey.set(key, cell);
    return cell;
  }
}
