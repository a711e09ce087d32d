import { readFileSync } from 'node:fs';
import { join } from 'node:path';

let cached: string | undefined;

/** This router's version, from its package.json (read once). */
export function packageVersion(): string {
  if (cached) return cached;
  try {
    const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
    cached = pkg.version ?? '0.0.0';
  } catch {
    cached = '0.0.0';
  }
  return cached;
}

/** The checkout (or installed package) root: dist/.. when built, the working directory when run from source. */
function packageRoot(): string {
  return typeof __dirname === 'string' ? join(__dirname, '..') : process.cwd();
}
