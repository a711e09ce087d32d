import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Ports this process was given, never given again. */
const handedOut = new Set<number>();

/**
 * A free loopback port (bound, then released) below the kernel's ephemeral range. A port from
 * that range (listen(0)) goes back into it once released, and a later listen(0) may be handed
 * it: measured here, 2 runs in 3,000 where one of four listen(0) got the port just released.
 * A worker started after the port was chosen (the router starts its embedded simulated workers
 * before it listens) could then answer on the address meant for the router, or bring a
 * "refused" address to life.
 */
export async function unusedPort(): Promise<number> {
  const low = 10_000;
  const high = Math.max(low + 1, ephemeralLow()) - 1;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    // Two picks before either is listened on must differ: the kernel cannot tell them apart.
    if (handedOut.has(port)) continue;
    const bound = await bindAndRelease(port).catch(() => undefined);
    if (bound === undefined) continue;
    handedOut.add(bound);
    return bound;
  }
  throw new Error(`no free loopback port between ${low} and ${high}`);
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low)) return low;
  } catch {
    // Not Linux: the IANA range.
  }
  return 49_152;
}

async function bindAndRelease(port: number): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
