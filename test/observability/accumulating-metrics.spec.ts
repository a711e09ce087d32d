import { describe, expect, it } from '@jest/globals';
import { Counter, Histogram, Registry } from 'prom-client';
import { AccumulatingCounter, AccumulatingHistogram } from '../../src/observability/metrics/accumulating-metrics';
import { parsePrometheusText, sampleValue, samplesOf } from './prom-text';

const BUCKETS = [0.001, 0.01, 0.1, 0.25, 1, 10];
/** On, between, below and above the bounds, with sums that are not exact in binary. */
const VALUES = [0, -0.5, 0.001, 0.0011, 0.01, 0.1, 0.2, 0.1 + 0.2, 0.25, 0.7, 1, 9.99, 10, 10.0001, 1234.5];

function pair(): { ours: Registry; theirs: Registry } {
  return { ours: new Registry(), theirs: new Registry() };
}

describe('AccumulatingHistogram', () => {
  it('exposes the same text and JSON as a prom-client Histogram fed the same values', async () => {
    const { ours, theirs } = pair();
    const labelled = new AccumulatingHistogram({ name: 'x_seconds', help: 'X "time"\\n', labelNames: ['endpoint', 'stream'], buckets: BUCKETS }).registerIn(ours);
    const plain = new AccumulatingHistogram({ name: 'y_seconds', help: 'Y', buckets: BUCKETS }).registerIn(ours);
    const refLabelled = new Histogram({ name: 'x_seconds', help: 'X "time"\\n', labelNames: ['endpoint', 'stream'], buckets: BUCKETS, registers: [theirs] });
    const refPlain = new Histogram({ name: 'y_seconds', help: 'Y', buckets: BUCKETS, registers: [theirs] });

    // Before any observation: the unlabelled one is a zero series, the labelled one empty.
    expect(await ours.metrics()).toBe(await theirs.metrics());

    VALUES.forEach((v, i) => {
      const endpoint = i % 3 === 0 ? '/v1/completions' : 'quote"back\\slash\nline';
      const stream = i % 2 === 0 ? 'true' : 'false';
      labelled.cell(endpoint, stream).observe(v);
      refLabelled.labels({ endpoint, stream }).observe(v);
      plain.cell().observe(v);
      refPlain.observe(v);
    });
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());

    // And the text reads as a valid, cumulative histogram with the values counted.
    const m = parsePrometheusText(text);
    expect(m.get('y_seconds')?.type).toBe('histogram');
    expect(sampleValue(m, 'y_seconds_count')).toBe(VALUES.length);
    expect(sampleValue(m, 'y_seconds_bucket', { le: '0.1' })).toBe(VALUES.filter((v) => v <= 0.1).length);
    expect(sampleValue(m, 'y_seconds_bucket', { le: '+Inf' })).toBe(VALUES.length);
    expect(samplesOf(m, 'x_seconds_count')).toHaveLength(4);
  });

  it('drops non-finite observations instead of throwing', async () => {
    const h = new AccumulatingHistogram({ name: 'z', help: 'Z', buckets: BUCKETS }).registerIn(new Registry());
    h.cell().observe(0.5);
    for (const v of [NaN, Infinity, -Infinity]) h.cell().observe(v);
    const c = h.cell();
    expect([c.count, c.sum, Array.from(c.counts)]).toEqual([1, 0.5, [0, 0, 0, 0, 1, 0]]);
  });

  it('refuses the reserved le label and unsorted buckets', () => {
    expect(() => new AccumulatingHistogram({ name: 'a', help: 'A', labelNames: ['le'], buckets: BUCKETS })).toThrow(/reserved/);
    expect(() => new AccumulatingHistogram({ name: 'a', help: 'A', buckets: [1, 0.5] })).toThrow(/increase/);
  });
});

describe('AccumulatingCounter', () => {
  it('exposes the same text as a prom-client Counter, numbers as label values included', async () => {
    const { ours, theirs } = pair();
    const labelled = new AccumulatingCounter({ name: 'req_total', help: 'Requests', labelNames: ['method', 'status'] }).registerIn(ours);
    const plain = new AccumulatingCounter({ name: 'plain_total', help: 'Plain' }).registerIn(ours);
    const refLabelled = new Counter({ name: 'req_total', help: 'Requests', labelNames: ['method', 'status'], registers: [theirs] });
    const refPlain = new Counter({ name: 'plain_total', help: 'Plain', registers: [theirs] });
    expect(await ours.metrics()).toBe(await theirs.metrics());

    for (const [method, status, by] of [['GET', 200, 1], ['POST', 404, 0], ['GET', 200, 2.5], ['POST', 500, 1]] as const) {
      labelled.cell(method, status).inc(by);
      refLabelled.labels({ method, status: String(status) }).inc(by);
      plain.cell().inc();
      refPlain.inc();
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    expect(sampleValue(parsePrometheusText(text), 'req_total', { method: 'GET', status: '200' })).toBe(3.5);
  });

  it('keeps one cell per tuple and ignores negative or non-finite increments', () => {
    const c = new AccumulatingCounter({ name: 'c_total', help: 'C', labelNames: ['a', 'b'] });
    expect(c.cell('x', 1)).toBe(c.cell('x', '1'));
    // Positional values are separated: ('a b', 'c') and ('a', 'b c') are different series.
    expect(c.cell('a b', 'c')).not.toBe(c.cell('a', 'b c'));
    const cell = c.cell('x', 1);
    for (const by of [-1, NaN, Infinity]) cell.inc(by);
    cell.inc();
    expect(cell.value).toBe(1);
  });

  it('caps distinct label tuples: new ones past the cap share the all-`other` series', async () => {
    const registry = new Registry();
    const c = new AccumulatingCounter({ name: 'capped_total', help: 'Capped', labelNames: ['server', 'policy'], maxTuples: 3 }).registerIn(registry);
    for (let i = 0; i < 10; i++) c.cell(`s${i}`, 'p').inc();
    c.cell('s0', 'p').inc(); // tuples seen before the cap keep their own series
    c.cell('other', 'other').inc(); // a real all-`other` tuple is that same series, not a duplicate
    const m = parsePrometheusText(await registry.metrics());
    const samples = samplesOf(m, 'capped_total');
    expect(samples.map((s) => s.labels)).toEqual([
      { server: 's0', policy: 'p' },
      { server: 's1', policy: 'p' },
      { server: 's2', policy: 'p' },
      { server: 'other', policy: 'other' },
    ]);
    expect(sampleValue(m, 'capped_total', { server: 's0' })).toBe(2);
    expect(sampleValue(m, 'capped_total', { server: 'other' })).toBe(8);
    expect(sampleValue(m, 'capped_total')).toBe(12);
  });

  it('drops matching series on removeWhere and all on reset, keeping an unlabelled zero series', async () => {
    const registry = new Registry();
    const c = new AccumulatingCounter({ name: 'r_total', help: 'R', labelNames: ['server'] }).registerIn(registry);
    const plain = new AccumulatingCounter({ name: 'p_total', help: 'P' }).registerIn(registry);
    c.cell('http://a').inc();
    c.cell('http://b').inc(2);
    plain.cell().inc(5);
    c.removeWhere((labels) => labels.server === 'http://a');
    let m = parsePrometheusText(await registry.metrics());
    expect(samplesOf(m, 'r_total').map((s) => s.labels.server)).toEqual(['http://b']);
    // A removed tuple starts again from zero.
    c.cell('http://a').inc();
    expect(c.cell('http://a').value).toBe(1);
    registry.resetMetrics();
    m = parsePrometheusText(await registry.metrics());
    expect(samplesOf(m, 'r_total')).toEqual([]);
    expect(samplesOf(m, 'p_total')).toEqual([{ name: 'p_total', labels: {}, value: 0 }]);
  });

  it('refuses more than four label names', () => {
    expect(() => new AccumulatingCounter({ name: 'n', help: 'N', labelNames: ['a', 'b', 'c', 'd', 'e'] })).toThrow(/at most 4/);
  });
});
