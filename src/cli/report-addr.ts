import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * `--report_addr FILE`, as trtllm-serve writes it: `host:port` and a newline, the port the one
 * actually bound (so the config may say port 0), written to a temporary file in the same
 * folder and renamed over FILE, so a reader never sees a partial line. A wildcard listen
 * address is reported as the machine's host name (a reader cannot dial 0.0.0.0); an IPv6
 * literal is bracketed.
 */
export function writeReportAddr(file: string, host: string, port: number): string {
  const reported = host === '0.0.0.0' || host === '::' || host === '' ? hostname() : host;
  const line = `${reported.includes(':') ? `[${reported}]` : reported}:${port}\n`;
  const target = resolve(file);
  mkdirSync(dirname(target), { recursive: true });
  const temporary = join(dirname(target), `${basename(target)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, line);
    renameSync(temporary, target);
  } finally {
    rmSync(temporary, { force: true });
  }
  return line.trimEnd();
}
