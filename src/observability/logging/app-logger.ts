import type { LoggerService, LogLevel } from '@nestjs/common';
import pino, { type DestinationStream, type LevelWithSilent, type LoggerOptions } from 'pino';
import type { AppConfig } from '../../config';
import { requestContextStorage } from '../context/request-context';
import { pinoLevelFor } from './log-levels';
import { PinoLoggerService } from './pino-logger.service';

export interface AppLoggerOptions {
  level: LevelWithSilent;
  pretty?: boolean;
  /** Off: fields that carry prompts or completions are censored in every line. */
  logPayloads?: boolean;
  /** Where lines go (stdout by default); tests pass a stream to read them. */
  destination?: DestinationStream;
}

/** Field names that carry prompts or completions, censored unless payload logging is on. */
const PAYLOAD_PATHS = ['prompt', 'messages', 'choices', 'body', '*.prompt', '*.messages', '*.choices'];

export function pinoOptions(options: AppLoggerOptions): LoggerOptions {
  return {
    level: options.level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // Every line written while a request is served carries its id. A new object each time:
    // pino merges the line's fields into what the mixin returns.
    mixin: () => {
      const ctx = requestContextStorage.getStore();
      return ctx ? { reqId: ctx.requestId } : {};
    },
    ...(options.logPayloads ? {} : { redact: { paths: PAYLOAD_PATHS, censor: '[redacted]' } }),
  };
}

/** The app's pino logger as a Nest LoggerService; pretty lines need pino-pretty (a dev dependency). */
export async function createAppLogger(options: AppLoggerOptions): Promise<PinoLoggerService> {
  let destination = options.destination;
  let prettyMissing = false;
  if (!destination && options.pretty) {
    try {
      const { default: pretty } = await import('pino-pretty');
      destination = pretty({
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname,context,reqId',
        messageFormat: '{if context}[{context}] {end}{if reqId}({reqId}) {end}{msg}',
      });
    } catch {
      prettyMissing = true;
    }
  }
  const logger = destination ? pino(pinoOptions(options), destination) : pino(pinoOptions(options));
  if (prettyMissing) logger.warn('logging.pretty is on but pino-pretty is not installed: writing JSON lines');
  return new PinoLoggerService(logger);
}

export interface ResolveLoggerOptions {
  /** A logger of the caller's (used as is), a Nest level list, or false for silence. */
  logger?: LoggerService | LogLevel[] | false;
  destination?: DestinationStream;
  env?: NodeJS.ProcessEnv;
}

/**
 * The logger for an app: config `logging` (DISAGG_LOG_LEVEL already applied by the config
 * loader), pretty when asked or under NODE_ENV=development; a Nest level list narrows it.
 */
export async function resolveAppLogger(config: AppConfig['logging'], options: ResolveLoggerOptions = {}): Promise<LoggerService> {
  const given = options.logger;
  if (given !== undefined && given !== false && !Array.isArray(given)) return given;
  const env = options.env ?? process.env;
  const level = given === false ? 'silent' : Array.isArray(given) ? pinoLevelFor(given) : config.level;
  return createAppLogger({
    level,
    pretty: config.pretty || env.NODE_ENV === 'development',
    logPayloads: config.log_payloads,
    destination: options.destination,
  });
}
