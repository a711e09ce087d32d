import type { LoggerService, LogLevel } from '@nestjs/common';
import type { Level, Logger as Pino } from 'pino';
import { pinoLevelFor } from './log-levels';

/**
 * Nest's LoggerService on pino: every Nest `Logger` in the app writes structured JSON lines
 * with its context as `context`. Disabled levels cost one comparison.
 */
export class PinoLoggerService implements LoggerService {
  /** One child per Nest context (class names: a small, fixed set). */
  private readonly children = new Map<string, Pino>();

  constructor(readonly pino: Pino) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  setLogLevels(levels: LogLevel[]): void {
    const level = pinoLevelFor(levels);
    this.pino.level = level;
    // pino children keep the level they were made with.
    for (const c of this.children.values()) c.level = level;
  }

  isLevelEnabled(level: Level): boolean {
    return this.pino.isLevelEnabled(level);
  }

  /**
   * Nest calls `log(message, context)` and `error(message, stack, context)`; a context-bound
   * Logger always appends its context last (after an `undefined` stack for errors).
   */
  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    let n = params.length;
    let context: string | undefined;
    if (n > 0 && typeof params[n - 1] === 'string' && !(level === 'error' && n === 1 && isStack(params[0]))) {
      context = params[n - 1] as string;
      n -= 1;
    }
    const logger = context ? this.child(context) : this.pino;
    const fields: Record<string, unknown> = {};
    if (level === 'error' && n > 0 && typeof params[0] === 'string') fields.stack = params[0];
    if (message instanceof Error) {
      fields.err = message;
      logger[level](fields, message.message);
    } else if (typeof message === 'object' && message !== null) {
      const { msg, ...rest } = message as Record<string, unknown>;
      logger[level]({ ...rest, ...fields }, typeof msg === 'string' ? msg : undefined);
    } else {
      const text = String(message);
      // `[requestId] message`, the request path's convention, becomes a reqId field.
      const tagged = text.charCodeAt(0) === 91 ? REQUEST_TAG.exec(text) : null;
      if (tagged) fields.reqId = tagged[1];
      logger[level](fields, tagged ? tagged[2] : text);
    }
  }

  private child(context: string): Pino {
    let c = this.children.get(context);
    if (!c) {
      c = this.pino.child({ context });
      this.children.set(context, c);
    }
    return c;
  }
}

/** The request id charset of the app factory's genReqId. */
const REQUEST_TAG = /^\[([\w.:-]{1,128})\] ([\s\S]*)$/;

function isStack(v: unknown): boolean {
  return typeof v === 'string' && v.includes('\n    at ');
}
