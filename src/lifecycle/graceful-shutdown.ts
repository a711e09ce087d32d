import type { INestApplication } from '@nestjs/common';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * SIGTERM/SIGINT run Nest's shutdown hooks (the drain, then the session and the server) and
 * exit 0; a second signal while that runs exits at once with code 1.
 */
export function enableGracefulShutdown(app: INestApplication, exit: (code: number) => void = (c) => process.exit(c)): void {
  app.enableShutdownHooks([...SIGNALS], { useProcessExit: true });
  let received = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    received++;
    if (received < 2) return;
    process.stderr.write(`disagg-router: second ${signal}, exiting without waiting for the drain\n`);
    exit(1);
  };
  for (const s of SIGNALS) process.on(s, onSignal);
}
