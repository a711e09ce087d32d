import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createRouterApp } from './app.factory';
import { buildConfig, ConfigError, configPathFrom, loadConfigFile, type RouterConfig } from './config';
import { resolveAppLogger } from './observability/logging/app-logger';
import { enableGracefulShutdown } from './lifecycle/graceful-shutdown';
import { startEmbeddedCluster } from './simulator/embedded-cluster';

/**
 * `node dist/main.js [--config FILE]`: loads and validates the config, starts the embedded
 * simulated cluster when the config asks for one, then serves.
 */
async function bootstrap(): Promise<void> {
  const logger = new Logger('Main');
  let config: RouterConfig;
  const path = configPathFrom(process.argv.slice(2), process.env);
  try {
    config = loadConfigFile(path);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`disagg-router: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Structured lines from the first one on; the app keeps this logger.
  const appLogger = await resolveAppLogger(config.logging);
  Logger.overrideLogger(appLogger);
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
  enableGracefulShutdown(app);
  if (stopCluster) app.getHttpServer().once('close', () => void stopCluster!());
  await app.listen(config.port, config.hostname);
  logger.log(`disagg-router listening on http://${config.hostname}:${config.port} (config ${path})`);
}

void bootstrap().catch((err: unknown) => {
  // Config problems found while the app is built (policy names and arguments, a damaged
  // admin persist file) end like those of the file itself: one line, exit code 2.
  if (err instanceof ConfigError) {
    process.stderr.write(`disagg-router: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`disagg-router failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
