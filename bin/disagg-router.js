#!/usr/bin/env node
'use strict';
// Runs the built router (dist/); builds it first when a checkout has not been built yet.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = join(__dirname, '..');
const main = join(root, 'dist', 'main.js');
if (!existsSync(main)) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    process.stderr.write(`disagg-router: ${main} is missing and TypeScript is not installed to build it (run npm ci, then npm run build)\n`);
    process.exit(1);
  }
  process.stderr.write('disagg-router: building dist/ (first run)...\n');
  const built = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
require(main);
