import { describe, expect, it } from '@jest/globals';
import { CliAnswer, parseCli, UsageError } from '../../src/cli/cli-args';

const EXAMPLE = 'config/example.yaml';
const DEFAULT = 'config/default.yaml';

function usageError(argv: string[], env: NodeJS.ProcessEnv = {}): UsageError {
  try {
    parseCli(argv, env);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error('expected a usage error');
}

describe('command line', () => {
  it("takes trtllm-serve disaggregated's flags, with or without the word 'disaggregated'", () => {
    const argv = ['-c', EXAMPLE, '-m', EXAMPLE, '-t', '60', '-r', '120', '-l', 'warning', '--metrics-log-interval', '5'];
    const expected = { configPath: EXAMPLE, metadataServerConfigFile: EXAMPLE, serverStartTimeout: 60, requestTimeout: 120, logLevel: 'warn', metricsLogInterval: 5 };
    expect(parseCli(argv, {})).toMatchObject(expected);
    expect(parseCli(['disaggregated', ...argv], {})).toMatchObject(expected);
    expect(parseCli(['disaggregated', '--config_file', EXAMPLE, '--server_start_timeout=30', '--request_timeout', '9', '--log_level', 'verbose'], {}))
      .toMatchObject({ configPath: EXAMPLE, serverStartTimeout: 30, requestTimeout: 9, logLevel: 'debug' });
    expect(parseCli(['--config', EXAMPLE, '--host', '0.0.0.0', '--port', '9000'], {})).toMatchObject({ host: '0.0.0.0', port: 9000 });
  });

  it('finds the config in -c/--config (the last given), then DISAGG_CONFIG, then the fallback npm start names', () => {
    expect(parseCli(['--config', DEFAULT, '-c', EXAMPLE], { DISAGG_CONFIG: DEFAULT }).configPath).toBe(EXAMPLE);
    expect(parseCli(['-c', DEFAULT, '--config', EXAMPLE], {}).configPath).toBe(EXAMPLE);
    expect(parseCli([], { DISAGG_CONFIG: EXAMPLE }).configPath).toBe(EXAMPLE);
    expect(parseCli(['--fallback-config', DEFAULT], { DISAGG_CONFIG: EXAMPLE }).configPath).toBe(EXAMPLE);
    expect(parseCli(['--fallback-config', DEFAULT], {}).configPath).toBe(DEFAULT);
    expect(parseCli(['--fallback-config', DEFAULT, '-c', EXAMPLE], {}).configPath).toBe(EXAMPLE);
  });

  it("takes the newest trtllm-serve's flags: -s/--schedule_style, --telemetry/--no-telemetry, --report_addr; --config_file is the deprecated spelling", () => {
    expect(parseCli(['disaggregated', '-c', EXAMPLE, '-s', 'Generation_First', '--no-telemetry', '--report_addr', '/tmp/a.addr'], {}))
      .toMatchObject({ scheduleStyle: 'generation_first', telemetry: false, reportAddr: '/tmp/a.addr', deprecatedConfigFlag: false });
    expect(parseCli(['--config_file', EXAMPLE, '--schedule_style', 'context_first', '--telemetry'], {}))
      .toMatchObject({ scheduleStyle: 'context_first', telemetry: true, deprecatedConfigFlag: true });
    // Not given: nothing to say about telemetry, the file's schedule_style stays.
    expect(parseCli(['-c', EXAMPLE], {})).toMatchObject({ scheduleStyle: undefined, telemetry: undefined, reportAddr: undefined });
    expect(usageError(['-c', EXAMPLE, '-s', 'sideways']).message).toMatch(/'sideways'.*context_first, generation_first/);
  });

  it('refuses, naming the offending argument: unknown flags, bad values, other commands, missing files, no config', () => {
    expect(usageError(['-c', EXAMPLE, '--frobnicate']).message).toMatch(/unknown option '--frobnicate'/);
    expect(usageError(['-c', EXAMPLE, '-t', 'soon']).message).toMatch(/-t takes a number of seconds/);
    expect(usageError(['-c', EXAMPLE, '-l', 'loud']).message).toMatch(/'loud'.*internal_error, error, warning/);
    expect(usageError(['-c', EXAMPLE, '--port', '70000']).message).toMatch(/--port/);
    expect(usageError(['serve', '-c', EXAMPLE]).message).toMatch(/unknown command 'serve'/);
    expect(usageError(['-c', 'nowhere.yaml']).message).toMatch(/config file not found: nowhere.yaml/);
    expect(usageError(['-c', EXAMPLE, '-m', 'meta-nowhere.yaml']).message).toMatch(/metadata server config file not found: meta-nowhere.yaml/);
    expect(usageError([]).message).toMatch(/no config file given/);
    expect(usageError(['-c']).message).toMatch(/argument missing/);
    // The usage goes with every refusal.
    expect(usageError(['--frobnicate']).usage).toMatch(/Usage: disagg-router \[disaggregated\] -c CONFIG.yaml/);
  });

  it('answers --help and --version', () => {
    const answer = (argv: string[]): string => {
      try {
        parseCli(argv, {});
      } catch (err) {
        if (err instanceof CliAnswer) return err.output;
        throw err;
      }
      throw new Error('expected an answer');
    };
    expect(answer(['--help'])).toMatch(/--server_start_timeout/);
    expect(answer(['--version'])).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
