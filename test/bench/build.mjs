// Transpiles src/, test/support/ and test/bench/ to dist-bench/ (CommonJS, decorator metadata
// on) with swc, file by file: fast, and independent of type errors in code under construction.
// Type checking stays with `npm run typecheck`.
import { transformFile } from '@swc/core';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';

const root = process.cwd();
const out = join(root, 'dist-bench');
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
        const { code, map } = await transformFile(file, { ...options, filename: file, sourceFileName: relative(dirname(target), file) });
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, `${code}\n//# sourceMappingURL=${target.split('/').pop()}.map\n`);
        if (map) await writeFile(`${target}.map`, map);
        count++;
      })(),
    );
  }
}
await Promise.all(jobs);
process.stdout.write(`bench build: ${count} files -> dist-bench/\n`);
