/**
 * Code comments cite the protocol notes by heading (`see docs/protocol.md "Streaming"`): every
 * cited heading must exist, and no comment may cite a protocol file outside the repository.
 * KNOWN_OUTSIDE_CITATIONS lists the files that still do today (being rewritten); entries that
 * no longer occur are printed for removal.
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = process.cwd();
const DOC = 'docs/protocol.md';
const KNOWN_OUTSIDE_CITATIONS: readonly string[] = [];

function codeFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'fixtures' ? [] : codeFiles(path);
    return /\.(ts|mjs|js)$/.test(name) ? [path] : [];
  });
}

describe(`citations of ${DOC}`, () => {
  const headings = new Set(
    readFileSync(join(ROOT, DOC), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('## '))
      .map((line) => line.slice(3).trim()),
  );
  const files = ['src', 'test', 'bin'].flatMap((dir) => codeFiles(join(ROOT, dir)));

  it('has the headings the code cites', () => {
    for (const h of ['Two-phase request', 'Context answer', 'Generation request', 'Streaming', 'Worker endpoints', 'KV cache events', 'Block hashing', 'Cache salt', 'Configuration', 'Discovery (etcd)', 'Errors']) {
      expect(headings).toContain(h);
    }
    const missing: string[] = [];
    for (const file of files) {
      for (const m of readFileSync(file, 'utf8').matchAll(/docs\/protocol\.md "([^"]+)"/g)) {
        if (!headings.has(m[1])) missing.push(`${relative(ROOT, file)}: "${m[1]}"`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('is what comments cite, not a protocol file outside the repository', () => {
    // Split so that this file does not cite what it forbids.
    const outside = new RegExp(['PROTOCOL', '\\.md'].join(''));
    const citing = files.map((f) => relative(ROOT, f)).filter((f) => outside.test(readFileSync(join(ROOT, f), 'utf8')));
    const fixed = KNOWN_OUTSIDE_CITATIONS.filter((f) => !citing.includes(f));
    if (fixed.length > 0) console.log(`KNOWN_OUTSIDE_CITATIONS entries that no longer occur (remove them): ${fixed.join(', ')}`);
    expect(citing.filter((f) => !KNOWN_OUTSIDE_CITATIONS.includes(f))).toEqual([]);
  });
});
