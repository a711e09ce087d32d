import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createRouterApp } from '../app.factory';
import { buildConfig, trtllmEnv, type AppConfig, type ServerRole } from '../config';
import { enableGracefulShutdown } from '../lifecycle/graceful-shutdown';
import { resolveAppLogger } from '../observability/logging/app-logger';
import { ROUTE_TIMING_WINDOW } from '../observability/metrics/route-timing-log';
import { ServerRegistry } from '../servers';
import { startEmbeddedCluster } from '../simulator/embedded-cluster';
import { parseCli } from './cli-args';
import { configFromCli } from './cli-config';
import { writeReportAddr } from './report-addr';

/** TensorRT-LLM disaggregated-server keys this router reads but does not implement. */
const TRTLLM_KEYS_IGNORED = [
  'gen_strip_message_history', 'gen_tokids_ctxbytes', 'num_workers', 'disagg_coordinator_url',
];

export interface RunningCli {
  app: NestFastifyApplication;
  config: AppConfig;
  url: string;
  close(): Promise<void>;
}

export interface RunOptions {
  /** Called when -t runs out with an empty pool (the binary exits 1). */
  onStartTimeout(reason: string): void;
  /** Install SIGTERM/SIGINT handling (the binary does; tests do not). */
  handleSignals?: boolean;
}

/** Parses the command line, loads the config, starts the embedded simulator if asked, serves. */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv, options: RunOptions): Promise<RunningCli> {
  const logger = new Logger('Main');
  const cli = parseCli(argv, env);
  let config = configFromCli(cli, env);
  const switches = trtllmEnv(env);
  // Structured lines from the first one on; the app keeps this logger.
  const appLogger = await resolveAppLogger(config.logging);
  Logger.overrideLogger(appLogger);
  for (const key of TRTLLM_KEYS_IGNORED.filter((k) => k in config)) logger.warn(`${key}: TensorRT-LLM's key is not supported by this router; ignored`);
  announceTrtllmSwitches(logger, cli, switches);
  let stopCluster: (() => Promise<void>) | undefined;
  if (config.simulate) {
    const cluster = await startEmbeddedCluster(config.simulate);
    stopCluster = cluster.close;
    config = buildConfig({
      ...config,
      context_servers: { ...config.context_servers, num_instances: undefined, urls: cluster.contextUrls },
      generation_servers: { ...config.generation_servers, num_instances: undefined, urls: cluster.generationUrls },
    });
    logger.log(`simulated context workers: ${cluster.contextUrls.join(', ') || 'none'}`);
    logger.log(`simulated generation workers: ${cluster.generationUrls.join(', ')}`);
  }
  const app = await createRouterApp(config, { logger: appLogger });
  if (options.handleSignals) enableGracefulShutdown(app);
  if (stopCluster) app.getHttpServer().once('close', () => void stopCluster!());
  await app.listen(config.port, config.hostname);
  const { port } = app.getHttpServer().address() as { port: number };
  const url = `http://${config.hostname.includes(':') ? `[${config.hostname}]` : config.hostname}:${port}`;
  logger.log(`disagg-router listening on ${url} (config ${cli.configPath})`);
  if (cli.reportAddr) logger.log(`reported bound address ${writeReportAddr(cli.reportAddr, config.hostname, port)} to ${cli.reportAddr}`);
  const timers: NodeJS.Timeout[] = [];
  const registry = app.get(ServerRegistry);
  if (cli.serverStartTimeout !== undefined) {
    timers.push(setTimeout(() => {
      const reason = emptyPool(registry);
      if (reason) options.onStartTimeout(`${reason} after the server start timeout of ${cli.serverStartTimeout} s`);
    }, cli.serverStartTimeout * 1000));
  }
  if (cli.metricsLogInterval) {
    const metricsLogger = new Logger('Metrics');
    timers.push(setInterval(() => metricsLogger.log(poolSummary(registry)), cli.metricsLogInterval * 1000));
  }
  for (const t of timers) t.unref();
  app.getHttpServer().once('close', () => timers.forEach(clearTimeout));
  return { app, config, url, close: () => app.close() };
}

/** The deprecations and switches of TensorRT-LLM's command line and environment, said once at start. */
function announceTrtllmSwitches(logger: Logger, cli: ReturnType<typeof parseCli>, switches: ReturnType<typeof trtllmEnv>): void {
  if (cli.deprecatedConfigFlag) logger.warn('--config_file is deprecated, use --config instead.');
  if (cli.metricsLogInterval) logger.warn('--metrics-log-interval is deprecated in TensorRT-LLM (a no-op there); this router still logs its pool summary');
  if (cli.telemetry !== undefined) logger.log(`--${cli.telemetry ? '' : 'no-'}telemetry: accepted; this router collects and sends no telemetry`);
  if (switches.noRetry) logger.log('TRTLLM_DISAGG_NO_RETRY=1: worker calls are not retried');
  if (switches.benchmarkGenOnly) logger.warn('TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: generation-only benchmark mode, the context pool is skipped (answers are not real completions)');
  if (switches.logRouteTiming) logger.log(`TLLM_LOG_ROUTE_TIMING=1: each router logs its pick times every ${ROUTE_TIMING_WINDOW} picks`);
  if (switches.hashTokensPerBlock !== undefined) logger.log(`TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK: kv_cache_aware and conversation routers hash ${switches.hashTokensPerBlock} tokens per block`);
}

/** A pool that must serve and has no ready server, or undefined. */
function emptyPool(registry: ServerRegistry): string | undefined {
  if (registry.ready('generation').length === 0) return 'no generation server is ready';
  if (trtllmEnv().benchmarkGenOnly) return undefined;
  const context = registry.list('context');
  if (context.length > 0 && registry.ready('context').length === 0) return 'no context server is ready';
  return undefined;
}

function poolSummary(registry: ServerRegistry): string {
  const part = (role: ServerRole): string => {
    const all = registry.list(role);
    const active = all.reduce((n, s) => n + s.activeRequests, 0);
    return `${role} ${registry.ready(role).length}/${all.length} ready, ${active} in flight`;
  };
  return `${part('context')}; ${part('generation')}`;
}
