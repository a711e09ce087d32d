import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unusedPort } from './free-port';
import { ensureDebianPackage, serverProcess } from './server-process';

const NATS_BIN = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

export interface NatsServer {
  /** `nats://127.0.0.1:PORT`, as `cluster.bus` takes it. */
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** `http://127.0.0.1:PORT` of the monitoring endpoint (/varz...), when started with `monitor`. */
  readonly monitorUrl?: string;
  /** Kills the process (the JetStream store stays), e.g. to simulate an outage. */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same store. */
  start(): Promise<void>;
  /** Stalls (SIGSTOP) or resumes (SIGCONT) it: connections stay open, nothing is answered meanwhile. */
  freeze(frozen: boolean): Promise<void>;
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

/**
 * A real nats-server with JetStream on a free loopback port and a temporary store. When the
 * binary is missing it is installed (Debian package nats-server) if running as root.
 */
export async function startNats(opts: { monitor?: boolean } = {}): Promise<NatsServer> {
  ensureDebianPackage(NATS_BIN, 'nats-server', 'NATS_SERVER_BIN');
  const port = await unusedPort();
  const monitorPort = opts.monitor ? await unusedPort() : undefined;
  const storeDir = mkdtempSync(join(tmpdir(), 'disagg-nats-'));
  const args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(storeDir, 'js'), '-l', join(storeDir, 'nats.log')];
  if (monitorPort) args.push('-m', String(monitorPort));
  const { start, stop, freeze } = serverProcess({ name: `nats-server on port ${port}`, bin: NATS_BIN, args, logFile: join(storeDir, 'stdout.log'), answers: () => answers(port), pollMs: 25 });

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    monitorUrl: monitorPort ? `http://127.0.0.1:${monitorPort}` : undefined,
    stop,
    start,
    freeze,
    close: async () => {
      await freeze(false);
      await stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/** The server greets every connection with an INFO line once it is listening. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('data', (chunk) => done(chunk.toString().startsWith('INFO')));
    socket.once('error', () => done(false));
  });
}
