import { resolve } from 'node:path';
import {
  loadConfigFile,
  parseMetadataServerFile,
  readYamlFile,
  type AppConfig,
  type AppConfigInput,
} from '../config';
import type { CliOptions } from './cli-args';

/**
 * The config the command line describes: the file, the env overrides, then the flags (which
 * win). `-m FILE` replaces the keys it gives in `metadata_server_config`.
 */
export function configFromCli(cli: CliOptions, env: NodeJS.ProcessEnv): AppConfig {
  const metadata = cli.metadataServerConfigFile
    ? parseMetadataServerFile(readYamlFile(resolve(cli.metadataServerConfigFile), 'metadata server config file'), resolve(cli.metadataServerConfigFile))
    : undefined;
  return loadConfigFile(cli.configPath, env, (raw) => {
    const out: AppConfigInput = { ...raw };
    if (metadata) {
      out.metadata_server_config = { ...(raw.metadata_server_config ?? {}), ...metadata };
      // The metadata server's timeout times the workers' checks, as TensorRT-LLM does (a flag wins).
      if (metadata.health_check_timeout !== undefined) {
        out.health = { ...(raw.health ?? {}), timeout_s: metadata.health_check_timeout };
      }
    }
    if (cli.serverStartTimeout !== undefined) out.health = { ...(out.health ?? {}), startup_wait_s: cli.serverStartTimeout };
    if (cli.requestTimeout !== undefined) out.timeouts = { ...(raw.timeouts ?? {}), request_s: cli.requestTimeout };
    if (cli.logLevel !== undefined) out.logging = { ...(raw.logging ?? {}), level: cli.logLevel as 'info' };
    if (cli.scheduleStyle !== undefined) out.schedule_style = cli.scheduleStyle;
    if (cli.host !== undefined) out.hostname = cli.host;
    if (cli.port !== undefined) out.port = cli.port;
    return out;
  });
}
