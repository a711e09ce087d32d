/**
 * Polls a router's /health one call after another (20 ms apart) from a process of its own, so
 * the attack's client work (building and sending megabyte bodies) does not stall the timing.
 * Forked with the URL as argument; on the parent's `stop` it sends the latencies (ms) of the
 * answers it got, any status, and exits. It stops at the first call that gets no answer.
 */
const url = process.argv[2];
const latencies: number[] = [];
let stopped = false;

process.on('message', (m: string) => {
  if (m !== 'stop') return;
  stopped = true;
});

async function poll(): Promise<void> {
  while (!stopped) {
    const t = performance.now();
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(120_000) }).then(async (r) => (await r.arrayBuffer(), true), () => false);
    if (!ok) break;
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  while (!stopped) await new Promise((r) => setTimeout(r, 50));
  process.send?.(latencies, () => process.exit(0));
}

void poll();
