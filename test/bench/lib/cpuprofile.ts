import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: a package, node's own modules, or the app. */
function areaOf(url: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (!url) return '(native/gc)';
  const src = /\/(src|test)\/(.*)$/.exec(url);
  return src ? `${src[1]}/${src[2].split('/')[0]}` : url;
}

/** Top functions by self time, then self time by package, of a `--cpu-prof` file. */
export function summarizeProfile(file: string, top = 30): string {
  let profile: CpuProfile;
  try {
    profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  } catch (err) {
    return `no profile at ${file}: ${(err as Error).message}`;
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
    total += dt;
  }
  const fns = new Map<string, number>();
  const areas = new Map<string, number>();
  let idle = 0;
  for (const [id, us] of selfUs) {
    const f = byId.get(id)!.callFrame;
    if (f.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const short = f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|test)\//, '$1/');
    const key = `${f.functionName || '(anonymous)'}  ${short}:${f.lineNumber + 1}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
    const area = areaOf(f.url);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const busy = total - idle;
  // Inclusive time: every distinct function on a sample's stack gets the sample.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  const areaInclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const areasSeen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      if (f.url) areasSeen.add(areaOf(f.url));
    }
    for (const a of areasSeen) areaInclusive.set(a, (areaInclusive.get(a) ?? 0) + us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      if (f.functionName === '(idle)' || f.functionName === '(root)') continue;
      if (!/\/(src|test)\//.test(f.url) || f.url.includes('node_modules')) continue;
      seen.add(`${f.functionName || '(anonymous)'}  ${f.url.replace(/^.*?\/(src|test)\//, '$1/')}:${f.lineNumber + 1}`);
    }
    for (const k of seen) inclusive.set(k, (inclusive.get(k) ?? 0) + us);
  }
  const pct = (us: number): string => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
  const lines = [`busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s sampled (percentages of busy time)`, '', 'top self time:'];
  for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${pct(us)}  ${k}`);
  lines.push('', 'inclusive time of the app\'s own functions:');
  for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${pct(us)}  ${k}`);
  lines.push('', 'self time by area:');
  for (const [k, us] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 20)) lines.push(`${pct(us)}  ${k}`);
  lines.push('', 'inclusive time by area (time with that code anywhere on the stack):');
  for (const [k, us] of [...areaInclusive].sort((a, b) => b[1] - a[1]).slice(0, 25)) lines.push(`${pct(us)}  ${k}`);
  return lines.join('\n');
}
