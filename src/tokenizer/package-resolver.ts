import { createRequire } from 'node:module';
import * as path from 'node:path';

/**
 * A require() anchored at the project root. Works both in compiled CommonJS (dist/) and under
 * jest's ESM mode, where neither `__dirname` nor `import.meta` is available in both.
 */
export function projectRequire(): NodeJS.Require {
  return createRequire(path.join(process.cwd(), 'package.json'));
}
