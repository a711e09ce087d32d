/**
 * A strict reader of the Prometheus text exposition format (0.0.4), enough to check that
 * /metrics is well formed and to read sample values.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === '') continue;
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const [, kind, name, ...rest] = line.split(' ');
      if (!NAME.test(name)) throw new Error(`line ${i + 1}: bad metric name ${name}`);
      const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
      if (kind === 'HELP') family.help = rest.join(' ');
      else family.type = rest[0];
      families.set(name, family);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = parseSample(line, i + 1);
    const family = familyOf(families, sample.name);
    if (!family) throw new Error(`line ${i + 1}: sample ${sample.name} without # TYPE`);
    family.samples.push(sample);
  }
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function familyOf(families: Map<string, Family>, sampleName: string): Family | undefined {
  const direct = families.get(sampleName);
  if (direct) return direct;
  for (const suffix of SUFFIXES) {
    if (sampleName.endsWith(suffix)) {
      const f = families.get(sampleName.slice(0, -suffix.length));
      if (f) return f;
    }
  }
  return undefined;
}

function parseSample(line: string, lineNo: number): Sample {
  const brace = line.indexOf('{');
  let name: string;
  let rest: string;
  const labels: Record<string, string> = {};
  if (brace >= 0) {
    name = line.slice(0, brace);
    let i = brace + 1;
    while (line[i] !== '}') {
      const eq = line.indexOf('=', i);
      const labelName = line.slice(i, eq);
      if (!LABEL_NAME.test(labelName)) throw new Error(`line ${lineNo}: bad label name '${labelName}'`);
      if (line[eq + 1] !== '"') throw new Error(`line ${lineNo}: label value not quoted`);
      let j = eq + 2;
      let value = '';
      while (line[j] !== '"') {
        if (j >= line.length) throw new Error(`line ${lineNo}: unterminated label value`);
        if (line[j] === '\\') {
          const c = line[j + 1];
          value += c === 'n' ? '\n' : c;
          j += 2;
        } else value += line[j++];
      }
      labels[labelName] = value;
      i = j + 1;
      if (line[i] === ',') i++;
    }
    rest = line.slice(i + 1).trim();
  } else {
    const sp = line.indexOf(' ');
    name = line.slice(0, sp);
    rest = line.slice(sp + 1).trim();
  }
  if (!NAME.test(name)) throw new Error(`line ${lineNo}: bad sample name ${name}`);
  const valueText = rest.split(' ')[0];
  const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
  // Go's ParseFloat (Prometheus' reader) takes NaN in any case; prom-client writes `Nan`.
  if (Number.isNaN(value) && valueText.toLowerCase() !== 'nan') throw new Error(`line ${lineNo}: bad value '${valueText}' in: ${line}`);
  return { name, labels, value };
}

/** Buckets cumulative and ending in +Inf equal to _count, per label set. */
function checkHistogram(f: Family): void {
  const groups = new Map<string, { buckets: Sample[]; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    const g = groups.get(key) ?? { buckets: [] };
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      g.buckets.push(s);
    } else if (s.name === `${f.name}_count`) g.count = s.value;
    groups.set(key, g);
  }
  for (const [key, g] of groups) {
    let previous = 0;
    for (const b of g.buckets) {
      if (b.value < previous) throw new Error(`${f.name}${key}: buckets not cumulative`);
      previous = b.value;
    }
    const inf = g.buckets.find((b) => b.labels.le === '+Inf');
    if (!inf || inf.value !== g.count) throw new Error(`${f.name}${key}: +Inf bucket does not match _count`);
  }
}

/** Sum of the samples named `name` whose labels include `labels`. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = familyOf(families, name);
  if (!family) return 0;
  let sum = 0;
  for (const s of family.samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

/** The samples named `name` (label sets), for cardinality checks. */
export function samplesOf(families: Map<string, Family>, name: string): Sample[] {
  return familyOf(families, name)?.samples.filter((s) => s.name === name) ?? [];
}

export async function scrape(baseUrl: string, path = '/metrics'): Promise<Map<string, Family>> {
  const res = await fetch(`${baseUrl}${path}`);
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('text/plain')) throw new Error(`${path} content-type ${type}`);
  return parsePrometheusText(await res.text());
}
