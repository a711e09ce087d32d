import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { createRouterApp } from '../../../src/app.factory';
import { buildConfig, type AppConfigInput } from '../../../src/config';
import { ServerRegistry } from '../../../src/servers';
import { argOf, failChild, serveChild } from '../lib/proc-child';
import { applyAblations } from './router-ablations';

/** disagg-router itself, booted as main.ts does, with the config given as JSON. */
async function main(): Promise<void> {
  const input = JSON.parse(argOf('config', '{}')) as AppConfigInput;
  applyAblations(argOf('ablate'));
  // The production logger levels: the bench measures what is shipped.
  const app = await createRouterApp(buildConfig(input));
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  // Configured servers take traffic once health-checked: report ready only then.
  const registry = app.get(ServerRegistry);
  const deadline = Date.now() + 20_000;
  while (!registry.list().every((s) => s.status === 'ready')) {
    if (Date.now() > deadline) throw new Error(`servers not ready: ${registry.list().map((s) => `${s.url} ${s.status}`).join(', ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  serveChild([port], () => app.close());
}

main().catch(failChild);
