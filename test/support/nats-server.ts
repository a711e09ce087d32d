import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unusedPort } from './free-port';

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
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

/**
 * A real nats-server with JetStream on a free loopback port and a temporary store. When the
 * binary is missing it is installed (Debian package nats-server) if running as root.
 */
export async function startNats(opts: { monitor?: boolean } = {}): Promise<NatsServer> {
  ensureInstalled();
  const port = await unusedPort();
  const monitorPort = opts.monitor ? await unusedPort() : undefined;
  const storeDir = mkdtempSync(join(tmpdir(), 'disagg-nats-'));
  const args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(storeDir, 'js'), '-l', join(storeDir, 'nats.log')];
  if (monitorPort) args.push('-m', String(monitorPort));
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    if (child) return;
    const out = openSync(join(storeDir, 'stdout.log'), 'a');
    const proc = spawn(NATS_BIN, args, { stdio: ['ignore', out, out] });
    closeSync(out);
    child = proc;
    let exited: string | undefined;
    proc.once('exit', (code, signal) => {
      exited = `nats-server exited (${code ?? signal}); see ${join(storeDir, 'nats.log')}`;
      if (child === proc) child = undefined;
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (exited) throw new Error(exited);
      if (await answers(port)) return;
      if (Date.now() > deadline) throw new Error(`nats-server did not answer on port ${port} within 20 s`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    monitorUrl: monitorPort ? `http://127.0.0.1:${monitorPort}` : undefined,
    stop,
    start,
    close: async () => {
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

let installChecked = false;

function ensureInstalled(): void {
  if (installChecked || existsSync(NATS_BIN)) {
    installChecked = true;
    return;
  }
  if (process.getuid?.() !== 0) {
    throw new Error(`nats-server is not installed (${NATS_BIN} missing): run "sudo apt-get install -y nats-server" (or set NATS_SERVER_BIN)`);
  }
  execFileSync('sh', ['-c', 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nats-server'], { stdio: 'inherit', timeout: 600_000 });
  if (!existsSync(NATS_BIN)) throw new Error(`installing nats-server did not provide ${NATS_BIN}`);
  installChecked = true;
}
