import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { createRouterApp } from '../../../src/app.factory';
import { buildConfig, type AppConfigInput } from '../../../src/config';
import { ServerRegistry } from '../../../src/servers';
import { argOf } from '../lib/proc-child';

/** One router replica for the replicas benchmark: config as JSON, prints `PORT n` when ready. */
async function main(): Promise<void> {
  const app = await createRouterApp(buildConfig(JSON.parse(argOf('config', '{}')) as AppConfigInput));
  await app.listen(0, '127.0.0.1');
  const registry = app.get(ServerRegistry);
  const deadline = Date.now() + 20_000;
  while (!registry.list().every((s) => s.status === 'ready')) {
    if (Date.now() > deadline) throw new Error('servers not ready');
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write(`PORT ${(app.getHttpServer().address() as AddressInfo).port}\n`);
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
