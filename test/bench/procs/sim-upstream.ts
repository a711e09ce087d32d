import { startSimWorker } from '../../../src/simulator';
import { failChild, serveChild } from '../lib/proc-child';

/**
 * The project's simulated TensorRT-LLM workers (zero latency, byte tokenizer) as the bench's
 * upstream, instead of the static one: `--upstream=sim`. A realism check; the static upstream
 * is cheaper, so it keeps the router the bottleneck.
 */
async function main(): Promise<void> {
  const common = { latency: 'zero' as const, tokenizer: 'bytes', ctxCheck: 'blind' as const, keepReceived: 0 };
  const ctx = await startSimWorker({ ...common, role: 'context' });
  const gen = await startSimWorker({ ...common, role: 'generation' });
  serveChild([ctx.port, gen.port], async () => {
    await Promise.all([ctx.close(), gen.close()]);
  });
}

main().catch(failChild);
