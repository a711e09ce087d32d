import type { LoadResult } from './load';

/** One measured point: a load run against one target, with the target's CPU and memory. */
export interface PointResult extends LoadResult {
  cpuPerReqUs: number | null;
  /** The main thread's share of cpuPerReqUs (the rest: GC and compiler helpers, worker threads). */
  mainCpuPerReqUs: number | null;
  rssMb: number | null;
  upstreamCpuPerReqUs: number;
  /** Tokens from the tokenizer piece cache over all tokens of the prompts (chat rows). */
  cacheHitRatio?: number;
  cacheMb?: number;
}

/** The median of each figure over the rounds of one row. */
export interface RowResult {
  table: string;
  row: string;
  connections: number;
  stream: boolean;
  rounds: PointResult[];
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuPerReqUs: number | null;
  /** Median of the rounds' main-thread CPU per request. */
  mainCpuPerReqUs: number | null;
  rssMb: number | null;
  errors: number;
  /** row -> ratio of req/s (and CPU per request) against the named baselines. */
  vs: Record<string, { rps: number; cpu: number | null }>;
  note?: string;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const fmt = (n: number | null, digits = 0): string => (n === null || Number.isNaN(n) ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));

export function markdownTable(title: string, rows: RowResult[]): string {
  const baselines = [...new Set(rows.flatMap((r) => Object.keys(r.vs)))];
  const head = ['row', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'cpu/req us', 'main thread us', 'RSS MB', ...baselines.map((b) => `vs ${b}`), 'errors'];
  const lines = [`### ${title}`, '', `| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const ratios = baselines.map((b) => {
      const v = r.vs[b];
      if (!v) return '';
      return `${fmt(v.rps * 100)}%${v.cpu !== null ? ` (cpu ${fmt(v.cpu, 2)}x)` : ''}`;
    });
    lines.push(`| ${[r.row + (r.note ? ` (${r.note})` : ''), r.connections, fmt(r.rps), fmt(r.p50Ms, 2), fmt(r.p99Ms, 2), fmt(r.cpuPerReqUs), fmt(r.mainCpuPerReqUs), fmt(r.rssMb), ...ratios, r.errors].join(' | ')} |`);
  }
  return lines.join('\n');
}
