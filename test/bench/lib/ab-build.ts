import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The file of a module of the `--ab` build (`node test/bench/build.mjs --ab=<ref>`, in
 * dist-bench/ab), by its path there (`src/kv-cache/block-hash.js`); undefined when no such
 * build is present, so a bench measures this tree alone.
 */
export function abPath(path: string): string | undefined {
  const file = resolve('dist-bench/ab', path);
  return existsSync(file) ? file : undefined;
}

/** That module, loaded (see abPath). */
export function abModule<T>(path: string): T | undefined {
  const file = abPath(path);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return file === undefined ? undefined : (require(file) as T);
}
