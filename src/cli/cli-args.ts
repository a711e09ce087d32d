import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { packageVersion } from '../version';

/** What the command line asks for, before any file is read. */
export interface CliOptions {
  /** Config file: -c/--config or --config_file (the last one given), else DISAGG_CONFIG, else the fallback. */
  configPath: string;
  /** --config_file was used: TensorRT-LLM's deprecated spelling. */
  deprecatedConfigFlag?: boolean;
  /** -s/--schedule_style, over the file's schedule_style. */
  scheduleStyle?: 'context_first' | 'generation_first';
  /** --telemetry/--no-telemetry, when given: accepted; this router sends no telemetry either way. */
  telemetry?: boolean;
  /** --report_addr FILE: where the bound host:port is written once listening. */
  reportAddr?: string;
  metadataServerConfigFile?: string;
  /** Seconds; given only when the flag was. */
  serverStartTimeout?: number;
  requestTimeout?: number;
  logLevel?: string;
  metricsLogInterval?: number;
  host?: string;
  port?: number;
}

/** The command line could not be used: print the message and the usage, exit 2. */
export class UsageError extends Error {
  constructor(message: string, readonly usage: string) {
    super(message);
  }
}

/** A finished answer (--help, --version): print it, exit 0. */
export class CliAnswer extends Error {
  constructor(readonly output: string) {
    super('answered');
  }
}

/** trtllm-serve's -l values, mapped onto pino's levels (ours are accepted too). */
const TRTLLM_LOG_LEVELS: Record<string, string> = {
  internal_error: 'fatal',
  error: 'error',
  warning: 'warn',
  info: 'info',
  verbose: 'debug',
  debug: 'debug',
  trace: 'trace',
};
const OWN_LOG_LEVELS = ['fatal', 'warn', 'silent'];

function seconds(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0 || value.trim() === '') throw new InvalidArgumentError(`${flag} takes a number of seconds`);
    return n;
  };
}

function portNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('--port takes 0-65535');
  return n;
}

function scheduleStyle(value: string): 'context_first' | 'generation_first' {
  const style = value.toLowerCase();
  if (style !== 'context_first' && style !== 'generation_first') throw new InvalidArgumentError('one of context_first, generation_first');
  return style;
}

function logLevel(value: string): string {
  const level = TRTLLM_LOG_LEVELS[value] ?? (OWN_LOG_LEVELS.includes(value) ? value : undefined);
  if (!level) throw new InvalidArgumentError(`one of ${[...Object.keys(TRTLLM_LOG_LEVELS), ...OWN_LOG_LEVELS].join(', ')}`);
  return level;
}

function buildProgram(onConfig: (path: string, deprecated: boolean) => void): Command {
  const program = new Command('disagg-router')
    .description('OpenAI-compatible router for disaggregated serving; takes the flags of `trtllm-serve disaggregated`.')
    .usage('[disaggregated] -c CONFIG.yaml [options]')
    .argument('[command]', "optional 'disaggregated', as in `trtllm-serve disaggregated`")
    .option('-c, --config <file>', 'disagg config file (TensorRT-LLM format)')
    .option('--config_file <file>', 'deprecated spelling of --config')
    .option('-m, --metadata_server_config_file <file>', 'metadata server (etcd) config file')
    .option('-t, --server_start_timeout <seconds>', 'how long startup waits for the pools; exit 1 if a pool is still empty then', seconds('-t'))
    .option('-r, --request_timeout <seconds>', 'upstream request timeout (timeouts.request_s)', seconds('-r'))
    .option('-l, --log_level <level>', 'internal_error, error, warning, info, verbose, debug, trace', logLevel)
    .option('-s, --schedule_style <style>', 'context_first or generation_first (overrides schedule_style)', scheduleStyle)
    .option('--metrics-log-interval <seconds>', 'deprecated in TensorRT-LLM; here: log a pool summary every N seconds (0: off)', seconds('--metrics-log-interval'))
    .option('--telemetry', 'accepted for trtllm-serve compatibility; this router sends no telemetry')
    .option('--no-telemetry', 'accepted for trtllm-serve compatibility; this router sends no telemetry')
    .option('--report_addr <file>', 'write the bound host:port to FILE once listening (port 0 allowed)')
    .option('--host <host>', 'listen address (overrides hostname)')
    .option('--port <port>', 'listen port (overrides port)', portNumber)
    .addOption(new Option('--fallback-config <file>').hideHelp())
    .version(packageVersion(), '-V, --version')
    .helpOption('-h, --help')
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  program.on('option:config_file', (v: string) => onConfig(v, true));
  program.on('option:config', (v: string) => onConfig(v, false));
  return program;
}

/**
 * Parses the command line. Throws UsageError (exit 2) for an unknown flag, a bad value, an
 * unknown command word, a missing file or no config at all; CliAnswer for --help/--version.
 */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv): CliOptions {
  let lastConfig: string | undefined;
  let deprecatedConfigFlag = false;
  const program = buildProgram((path, deprecated) => {
    lastConfig = path;
    deprecatedConfigFlag ||= deprecated;
  });
  const usage = program.helpInformation();
  try {
    program.parse([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help') throw new CliAnswer(usage);
      if (err.code === 'commander.version') throw new CliAnswer(`${packageVersion()}\n`);
      throw new UsageError(err.message.replace(/^error: /, ''), usage);
    }
    throw err;
  }
  const command = program.args[0];
  if (command !== undefined && command !== 'disaggregated') {
    throw new UsageError(`unknown command '${command}' (only 'disaggregated' is served)`, usage);
  }
  const opts = program.opts<{
    metadata_server_config_file?: string;
    server_start_timeout?: number;
    request_timeout?: number;
    log_level?: string;
    metricsLogInterval?: number;
    host?: string;
    port?: number;
    fallbackConfig?: string;
    schedule_style?: 'context_first' | 'generation_first';
    telemetry?: boolean;
    report_addr?: string;
  }>();
  const configPath = lastConfig ?? (env.DISAGG_CONFIG || undefined) ?? opts.fallbackConfig;
  if (!configPath) throw new UsageError('no config file given: use -c FILE (or --config FILE, or DISAGG_CONFIG)', usage);
  for (const [flag, file] of [['config file', configPath], ['metadata server config file', opts.metadata_server_config_file]] as const) {
    if (file !== undefined && !existsSync(resolve(file))) throw new UsageError(`${flag} not found: ${file}`, usage);
  }
  return {
    configPath,
    deprecatedConfigFlag,
    scheduleStyle: opts.schedule_style,
    telemetry: program.getOptionValueSource('telemetry') === 'cli' ? opts.telemetry : undefined,
    reportAddr: opts.report_addr,
    metadataServerConfigFile: opts.metadata_server_config_file,
    serverStartTimeout: opts.server_start_timeout,
    requestTimeout: opts.request_timeout,
    logLevel: opts.log_level,
    metricsLogInterval: opts.metricsLogInterval,
    host: opts.host,
    port: opts.port,
  };
}

