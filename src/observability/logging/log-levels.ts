import type { LogLevel } from '@nestjs/common';
import type { Level, LevelWithSilent } from 'pino';

/** Nest's method names as pino levels (Nest `log` is pino `info`, `verbose` is `trace`). */
export const NEST_TO_PINO: Readonly<Record<LogLevel, Level>> = {
  verbose: 'trace',
  debug: 'debug',
  log: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'fatal',
};

const SEVERITY: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/**
 * A Nest level list (`['error', 'warn']`) as the one pino level that lets them all through:
 * the least severe of them. An empty list silences the logger.
 */
export function pinoLevelFor(levels: readonly LogLevel[]): LevelWithSilent {
  let lowest = SEVERITY.length;
  for (const l of levels) lowest = Math.min(lowest, SEVERITY.indexOf(NEST_TO_PINO[l]));
  return lowest < SEVERITY.length ? SEVERITY[lowest] : 'silent';
}

/**
 * Whether a level logs per request (a line per request, request ids in every line). Below
 * debug the request path stays free of that work.
 */
export function logsPerRequest(level: LevelWithSilent): boolean {
  return level === 'debug' || level === 'trace';
}
