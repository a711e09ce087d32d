// Transpiles src/, test/support/ and test/bench/ to dist-bench/ (CommonJS, decorator metadata
// on) with swc, file by file: fast, and independent of type errors in code under construction.
// Type checking stays with `npm run typecheck` (or `tsc -p tsconfig.bench.json`).
//
// `--ab=REF` builds a second tree, dist-bench/ab/, identical except that the router's hot-path
// files come from git REF: the bench then measures before and after side by side.
import { transform, transformFile } from '@swc/core';
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';

const root = process.cwd();
const abRef = process.argv.find((a) => a.startsWith('--ab='))?.slice('--ab='.length);
const out = join(root, abRef ? 'dist-bench/ab' : 'dist-bench');
const HOT_PATH = [
  'src/disagg/disagg.service.ts',
  'src/disagg/sse-usage-rewriter.ts',
  'src/openai/openai.controller.ts',
  'src/openai/fastify-client-channel.ts',
  'src/openai/request-validation.ts',
  'src/http-session/http-session.provider.ts',
  'src/app.factory.ts',
];
const overlay = new Map();
if (abRef) {
  for (const f of HOT_PATH) overlay.set(join(root, f), execFileSync('git', ['show', `${abRef}:${f}`], { encoding: 'utf8' }));
}
const dirs = ['src', 'test/support', 'test/bench'];

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
  for await (const file of tsFiles(join(root, dir))) {
    const target = join(out, relative(root, file)).replace(/\.ts$/, '.js');
    jobs.push(
      (async () => {
        const opts = { ...options, filename: file, sourceFileName: relative(dirname(target), file) };
        const { code, map } = overlay.has(file) ? await transform(overlay.get(file), opts) : await transformFile(file, opts);
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, `${code}\n//# sourceMappingURL=${target.split('/').pop()}.map\n`);
        if (map) await writeFile(`${target}.map`, map);
        count++;
      })(),
    );
  }
}
await Promise.all(jobs);
process.stdout.write(`bench build: ${count} files -> ${relative(root, out)}/${abRef ? ` (hot path from ${abRef})` : ''}\n`);
