import type { Metric, Registry } from 'prom-client';
import { LabelCells, MAX_LABEL_TUPLES, type LabelValue, type Labels } from './label-cells';

/**
 * Counters and histograms for the request path. prom-client hashes the label object on every
 * inc()/observe(), even through a labelled child; here a series is a plain cell looked up once
 * by its label values, and an update is a few additions on it. The metrics register with a
 * prom-client Registry through its metric interface (name, help, type, get, reset) and hand it
 * the same value records prom-client's Counter and Histogram do, so the exposition is the same.
 *
 * Unlike prom-client, a non-finite observation or a negative or non-finite increment is
 * dropped rather than thrown: a metrics update must not fail a request.
 */

/** One value record as prom-client's Registry formats it. */
interface ValueRecord {
  value: number;
  labels: Readonly<Record<string, string | number>>;
  metricName?: string;
  sharedLabels?: Labels;
  /** prom-client's buckets carry `null` (no exemplars); kept so the JSON is the same. */
  exemplar?: null;
}

interface MetricRecords {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: ValueRecord[];
  aggregator: 'sum';
}

export interface MetricOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
  /** Cap on distinct label tuples; see LabelCells. */
  maxTuples?: number;
}

export class CounterCell {
  value = 0;

  constructor(readonly labels: Labels) {}

  inc(by = 1): void {
    if (by >= 0 && by < Infinity) this.value += by;
  }
}

export class HistogramCell {
  /** Per-bucket (not cumulative) counts; values above the last bound are only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.observeMany(value, 1);
  }

  /** `times` observations of the same value (a mean standing for several gaps, for instance). */
  observeMany(value: number, times: number): void {
    if (!Number.isFinite(value) || !(times > 0)) return;
    const bounds = this.bounds;
    let i = 0;
    // The first bound >= value, as prom-client's findBound; bucket lists are short.
    while (i < bounds.length && value > bounds[i]) i++;
    if (i < bounds.length) this.counts[i] += times;
    this.sum += value * times;
    this.count += times;
  }
}

abstract class AccumulatingMetric<C extends { readonly labels: Labels }> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum' as const;
  abstract readonly type: 'counter' | 'histogram';
  protected readonly cells: LabelCells<C>;

  constructor(options: MetricOptions, create: (labels: Labels) => C) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
    this.cells = new LabelCells(this.labelNames, create, options.maxTuples ?? MAX_LABEL_TUPLES);
  }

  /** The series of these label values (label-name order); keep it or look it up per update. */
  cell(a?: LabelValue, b?: LabelValue, c?: LabelValue, d?: LabelValue): C {
    return this.cells.get(a, b, c, d);
  }

  /** Drops the series whose labels match (a removed server's, for example). */
  removeWhere(matches: (labels: Labels) => boolean): void {
    this.cells.removeWhere(matches);
  }

  /** Every series goes; an unlabelled metric keeps a zero series, exposed from the start as prom-client's. */
  reset(): void {
    this.cells.clear();
    if (this.labelNames.length === 0) this.cells.get();
  }

  /** prom-client's Registry takes any object of this shape; its typings list its own classes. */
  registerIn(registry: Registry): this {
    registry.registerMetric(this as unknown as Metric);
    return this;
  }

  protected records(values: ValueRecord[]): MetricRecords {
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class AccumulatingCounter extends AccumulatingMetric<CounterCell> {
  readonly type = 'counter' as const;

  constructor(options: MetricOptions) {
    super(options, (labels) => new CounterCell(labels));
    this.reset();
  }

  get(): Promise<MetricRecords> {
    const values: ValueRecord[] = [];
    for (const c of this.cells.values()) values.push({ value: c.value, labels: c.labels });
    return Promise.resolve(this.records(values));
  }
}

export class AccumulatingHistogram extends AccumulatingMetric<HistogramCell> {
  readonly type = 'histogram' as const;
  readonly upperBounds: readonly number[];
  private readonly leLabels: ReadonlyArray<{ le: number | string }>;

  /** `leLabel` writes a bound as the `le` label (default: the number as JavaScript prints it). */
  constructor(options: MetricOptions & { buckets: readonly number[]; leLabel?: (bound: number) => string }) {
    const bounds = Object.freeze([...options.buckets]);
    if (options.labelNames?.includes('le')) throw new Error('le is a reserved label keyword');
    for (let i = 1; i < bounds.length; i++) if (!(bounds[i] > bounds[i - 1])) throw new Error(`${options.name}: buckets must increase`);
    super(options, (labels) => new HistogramCell(labels, bounds));
    this.upperBounds = bounds;
    const label = options.leLabel;
    this.leLabels = [...bounds.map((le) => ({ le: label ? label(le) : le })), { le: '+Inf' }];
    this.reset();
  }

  /** For the text exposition: series labels shared by a series' lines, `le` first (as prom-client). */
  getForPromString(): Promise<MetricRecords> {
    const values: ValueRecord[] = [];
    const bucket = `${this.name}_bucket`;
    const sum = `${this.name}_sum`;
    const count = `${this.name}_count`;
    const n = this.upperBounds.length;
    for (const c of this.cells.values()) {
      let acc = 0;
      for (let i = 0; i < n; i++) {
        acc += c.counts[i];
        values.push({ labels: this.leLabels[i], sharedLabels: c.labels, value: acc, metricName: bucket, exemplar: null });
      }
      values.push(
        { labels: this.leLabels[n], sharedLabels: c.labels, value: c.count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels: c.labels, value: c.sum, metricName: sum },
        { labels: {}, sharedLabels: c.labels, value: c.count, metricName: count },
      );
    }
    return Promise.resolve(this.records(values));
  }

  /** For getMetricsAsJSON: labels merged into each record, as prom-client's get(). */
  async get(): Promise<MetricRecords> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return data;
  }
}
