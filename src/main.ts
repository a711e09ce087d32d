import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { CliAnswer, UsageError } from './cli/cli-args';
import { runCli, type RunningCli } from './cli/run';
import { ConfigError } from './config';

/**
 * `disagg-router [disaggregated] -c FILE [flags]` (the flags of `trtllm-serve disaggregated`;
 * `--help` lists them). Exit codes: 2 for a bad command line or config, 1 for a failed start
 * or pools still empty when `-t` runs out.
 */
async function main(): Promise<void> {
  let running: RunningCli | undefined;
  running = await runCli(process.argv.slice(2), process.env, {
    handleSignals: true,
    onStartTimeout: (reason) => {
      new Logger('Main').error(`giving up: ${reason}`);
      process.exitCode = 1;
      void (running?.close() ?? Promise.resolve()).finally(() => process.exit(1));
    },
  });
}

void main().catch((err: unknown) => {
  if (err instanceof CliAnswer) {
    process.stdout.write(err.output);
    process.exit(0);
  }
  if (err instanceof UsageError) {
    process.stderr.write(`disagg-router: ${err.message}\n\n${err.usage}`);
    process.exit(2);
  }
  // Config problems, in the file or found while the app is built (policy names and arguments,
  // a damaged admin persist file): one line, exit code 2.
  if (err instanceof ConfigError) {
    process.stderr.write(`disagg-router: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`disagg-router failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
