// Transpiles src/, test/support/ and test/bench/ to dist-bench/ (CommonJS, decorator metadata
// on) with swc, file by file: fast, and independent of type errors in code under construction.
// Type checking stays with `npm run typecheck` (or `tsc -p tsconfig.bench.json`).
//
// `--ab=REF` builds a second tree, dist-bench/ab/, from the router's sources at git REF (the
// whole of src/, test/support/ and test/bench/, so files moved or renamed since do not matter):
// the bench then measures before and after side by side, with this tree's node_modules.
import { transformFile } from '@swc/core';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

const root = process.cwd();
const abRef = process.argv.find((a) => a.startsWith('--ab='))?.slice('--ab='.length);
const out = join(root, abRef ? 'dist-bench/ab' : 'dist-bench');
const dirs = ['src', 'test/support', 'test/routing/support', 'test/bench'];
let sourceRoot = root;
if (abRef) {
  sourceRoot = await mkdtemp(join(tmpdir(), 'disagg-bench-ab-'));
  const tar = execFileSync('git', ['archive', '--format=tar', abRef, ...dirs], { maxBuffer: 256 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', sourceRoot], { input: tar });
}

async function* tsFiles(dir) {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') && !e.name.endsWith('.spec.ts')) yield p;
  }
}

const options = {
  module: { type: 'commonjs' },
  sourceMaps: true,
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
};

await rm(out, { recursive: true, force: true });
let count = 0;
const jobs = [];
for (const dir of dirs) {
  for await (const file of tsFiles(join(sourceRoot, dir))) {
    const target = join(out, relative(sourceRoot, file)).replace(/\.ts$/, '.js');
    jobs.push(
      (async () => {
        const opts = { ...options, filename: file, sourceFileName: relative(dirname(target), file) };
        const { code, map } = await transformFile(file, opts);
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, `${code}\n//# sourceMappingURL=${target.split('/').pop()}.map\n`);
        if (map) await writeFile(`${target}.map`, map);
        count++;
      })(),
    );
  }
}
await Promise.all(jobs);
if (abRef) await rm(sourceRoot, { recursive: true, force: true });
process.stdout.write(`bench build: ${count} files -> ${relative(root, out)}/${abRef ? ` (router at ${abRef})` : ''}\n`);
