/**
 * The import check: reads every relative import (and `export ... from`) of every file under
 * src/ with TypeScript's own pre-parser and checks how the rooms (the top-level folders of
 * src/) lean on each other. The layering rule:
 *
 * - App wiring (the files at the top of src/: app.module, app.factory, main) and `cli/` sit on
 *   top and may import any room. Other rooms never import app wiring.
 * - `openai/`, `anthropic/` and `responses/` are front doors: only app wiring, `cli/` and the
 *   door itself import one (the simulator also reads the Messages conversion, to count tokens
 *   as a worker would; `responses/` reuses the OpenAI body checks). Nothing a lower room needs
 *   (errors, events, constants) lives there.
 * - `disagg/` is the request flow under the front doors: only `openai/`, `anthropic/`,
 *   `responses/`, app wiring, `cli/` and `examples/` (which show how to extend the flow)
 *   import it.
 * - Every other arrow between rooms is allowed as long as the room graph has no cycle.
 *
 * KNOWN_VIOLATIONS lists the room-to-room arrows that break the rule today and are being
 * removed; the check fails on any arrow not in the list and prints the entries that no longer
 * occur, so the list only shrinks. Files over 250 lines are printed, not failed.
 *
 * `npm run check:imports` runs this spec alone.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const SRC = resolve(process.cwd(), 'src');
const APP_WIRING = new Set(['app.module', 'app.factory', 'main']);
const TOP_ROOMS = new Set([...APP_WIRING, 'cli']);
const MAY_IMPORT: Record<string, ReadonlySet<string>> = {
  openai: new Set([...TOP_ROOMS, 'openai', 'responses']),
  anthropic: new Set([...TOP_ROOMS, 'anthropic', 'simulator']),
  responses: new Set([...TOP_ROOMS, 'responses']),
  disagg: new Set([...TOP_ROOMS, 'openai', 'anthropic', 'responses', 'disagg', 'examples']),
};
const LONG_FILE_LINES = 250;

/** Arrows (`from -> to`) that break the rule today; each one removed stays removed. */
const KNOWN_VIOLATIONS: readonly string[] = [];

interface ImportEdge {
  file: string;
  specifier: string;
  from: string;
  to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** A file's room: its top-level folder, or its own name for the files at the top of src/. */
function roomOf(path: string): string {
  const parts = relative(SRC, path).split(sep);
  return parts.length === 1 ? parts[0].replace(/\.(ts|js)$/, '') : parts[0];
}

/** The file an import names (`x`, `x.ts`, `x/index.ts`; a `.js` suffix stands for `.ts`). */
function resolveImport(fromFile: string, specifier: string): string | undefined {
  const base = resolve(dirname(fromFile), specifier.replace(/\.js$/, ''));
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

function importEdges(files: string[]): { edges: ImportEdge[]; unresolved: string[] } {
  const edges: ImportEdge[] = [];
  const unresolved: string[] = [];
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: specifier } of info.importedFiles) {
      if (!specifier.startsWith('.')) continue;
      const target = resolveImport(file, specifier);
      const name = relative(SRC, file);
      if (!target) {
        unresolved.push(`${name}: ${specifier}`);
        continue;
      }
      if (!target.startsWith(SRC + sep)) continue;
      const from = roomOf(file);
      const to = roomOf(target);
      if (from !== to) edges.push({ file: name, specifier, from, to });
    }
  }
  return { edges, unresolved };
}

/** Rooms on a cycle, grouped (Tarjan's strongly connected components of size > 1). */
function cyclicGroups(arrows: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (room: string): void => {
    index.set(room, index.size);
    low.set(room, index.get(room)!);
    stack.push(room);
    onStack.add(room);
    for (const next of arrows.get(room) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(room, Math.min(low.get(room)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(room, Math.min(low.get(room)!, index.get(next)!));
      }
    }
    if (low.get(room) !== index.get(room)) return;
    const group: string[] = [];
    for (let top = stack.pop()!; ; top = stack.pop()!) {
      onStack.delete(top);
      group.push(top);
      if (top === room) break;
    }
    if (group.length > 1) groups.push(group.sort());
  };
  for (const room of arrows.keys()) if (!index.has(room)) visit(room);
  return groups;
}

/** Every arrow that breaks the rule, with the imports that make it. */
function violations(edges: ImportEdge[]): Map<string, string[]> {
  const arrows = new Map<string, Set<string>>();
  for (const e of edges) arrows.set(e.from, (arrows.get(e.from) ?? new Set()).add(e.to));
  const groupOf = new Map<string, number>();
  cyclicGroups(arrows).forEach((group, i) => group.forEach((room) => groupOf.set(room, i)));
  const out = new Map<string, string[]>();
  for (const e of edges) {
    const upward = MAY_IMPORT[e.to] !== undefined && !MAY_IMPORT[e.to].has(e.from);
    const intoWiring = APP_WIRING.has(e.to) && !TOP_ROOMS.has(e.from);
    const cyclic = groupOf.has(e.from) && groupOf.get(e.from) === groupOf.get(e.to);
    if (!upward && !intoWiring && !cyclic) continue;
    const why = [upward && `up into ${e.to}/`, intoWiring && 'into app wiring', cyclic && 'on a cycle'].filter(Boolean).join(', ');
    const key = `${e.from} -> ${e.to}`;
    out.set(key, [...(out.get(key) ?? []), `${e.file} imports ${e.specifier} (${why})`]);
  }
  return out;
}

describe('imports between the rooms of src/', () => {
  const files = sourceFiles(SRC);
  const { edges, unresolved } = importEdges(files);
  const found = violations(edges);

  it('reads the whole tree', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(edges.length).toBeGreaterThan(50);
    expect(unresolved).toEqual([]);
    const long = files
      .map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length }))
      .filter((f) => f.lines > LONG_FILE_LINES)
      .sort((a, b) => b.lines - a.lines);
    if (long.length > 0) console.log(`files in src/ over ${LONG_FILE_LINES} lines:\n  ${long.map((f) => `${f.lines} ${f.file}`).join('\n  ')}`);
  });

  it('finds a cycle and an upward arrow in a made-up graph (the checker itself)', () => {
    const made = (file: string, from: string, to: string): ImportEdge => ({ file, specifier: `../${to}`, from, to });
    const bad = violations([made('a/x.ts', 'routing', 'servers'), made('b/y.ts', 'servers', 'routing'), made('c/z.ts', 'health', 'openai'), made('d/w.ts', 'openai', 'health')]);
    expect([...bad.keys()].sort()).toEqual(['health -> openai', 'openai -> health', 'routing -> servers', 'servers -> routing']);
    expect(bad.get('health -> openai')![0]).toContain('up into openai/');
    expect(violations([made('a/x.ts', 'openai', 'disagg'), made('b/y.ts', 'disagg', 'servers')]).size).toBe(0);
  });

  it('adds no arrow that breaks the layering (cycles, or up into openai/ or disagg/)', () => {
    const known = new Set(KNOWN_VIOLATIONS);
    const fixed = KNOWN_VIOLATIONS.filter((arrow) => !found.has(arrow));
    if (fixed.length > 0) console.log(`KNOWN_VIOLATIONS entries that no longer occur (remove them):\n  ${fixed.join('\n  ')}`);
    const still = [...found.keys()].filter((arrow) => known.has(arrow));
    if (still.length > 0) console.log(`known violations still present:\n${still.map((a) => `  ${a}\n    ${found.get(a)!.join('\n    ')}`).join('\n')}`);
    const added = [...found.entries()].filter(([arrow]) => !known.has(arrow)).map(([arrow, why]) => `${arrow}\n    ${why.join('\n    ')}`);
    expect(added).toEqual([]);
  });
});
