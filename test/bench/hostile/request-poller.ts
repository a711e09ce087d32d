/**
 * Sends one POST after another (JSON body given as the third argument) to a router URL and
 * path, from a process of its own, so the attack's client work (building and sending megabyte
 * bodies, the scripted workers reading them) does not stall the timing. Forked with the URL,
 * path and body as arguments; on the parent's `stop` it sends the statuses and latencies (ms,
 * in order) of the calls that finished, and exits.
 */
const [url, path, body] = process.argv.slice(2);
const results: { status: string; ms: number }[] = [];
let stopped = false;

process.on('message', (m: string) => {
  if (m === 'stop') stopped = true;
});

async function poll(): Promise<void> {
  while (!stopped) {
    const t = performance.now();
    const status = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(120_000) })
      .then(async (r) => (await r.arrayBuffer(), String(r.status)), (err: Error) => `failed: ${err.message}`);
    results.push({ status, ms: performance.now() - t });
  }
  process.send?.(results, () => process.exit(0));
}

void poll();

export {};
