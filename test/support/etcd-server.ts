import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ETCD_BIN = process.env.ETCD_BIN ?? '/usr/bin/etcd';

export interface EtcdServer {
  /** `127.0.0.1:PORT`, as metadata_server_config and the register helper take it. */
  readonly endpoint: string;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** Stops the process (the data stays), e.g. to simulate an outage. */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same data. */
  start(): Promise<void>;
  /** stop() then start(). */
  restart(): Promise<void>;
  /** Stops it and removes its data dir. */
  close(): Promise<void>;
}

/**
 * A real etcd on free loopback ports with a temporary data dir. When the binary is missing it
 * is installed (Debian package etcd-server) if running as root; otherwise this fails with the
 * command to run.
 */
export async function startEtcd(): Promise<EtcdServer> {
  ensureEtcdInstalled();
  const [port, peerPort] = await freePorts(2);
  const dataDir = mkdtempSync(join(tmpdir(), 'disagg-etcd-'));
  const clientUrl = `http://127.0.0.1:${port}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', 'default',
    '--data-dir', join(dataDir, 'data'),
    '--listen-client-urls', clientUrl,
    '--advertise-client-urls', clientUrl,
    '--listen-peer-urls', peerUrl,
    '--initial-advertise-peer-urls', peerUrl,
    '--initial-cluster', `default=${peerUrl}`,
    '--logger', 'zap',
    '--log-level', 'warn',
  ];
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    if (child) return;
    const log = openSync(join(dataDir, 'etcd.log'), 'a');
    const proc = spawn(ETCD_BIN, args, { stdio: ['ignore', log, log] });
    closeSync(log);
    child = proc;
    let exited: string | undefined;
    proc.once('exit', (code, signal) => {
      exited = `etcd exited (${code ?? signal}); see ${join(dataDir, 'etcd.log')}`;
      if (child === proc) child = undefined;
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (exited) throw new Error(exited);
      if (await answers(clientUrl)) return;
      if (Date.now() > deadline) throw new Error(`etcd did not answer on ${clientUrl} within 20 s; see ${join(dataDir, 'etcd.log')}`);
      await new Promise((r) => setTimeout(r, 50));
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
    endpoint: `127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    dataDir,
    stop,
    start,
    restart: async () => {
      await stop();
      await start();
    },
    close: async () => {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function answers(clientUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
    const body = (await res.json()) as { health?: string };
    return res.status === 200 && body.health === 'true';
  } catch {
    return false;
  }
}

let installChecked = false;

function ensureEtcdInstalled(): void {
  if (installChecked || existsSync(ETCD_BIN)) {
    installChecked = true;
    return;
  }
  if (process.getuid?.() !== 0) {
    throw new Error(`etcd is not installed (${ETCD_BIN} missing): run "sudo apt-get install -y etcd-server" (or set ETCD_BIN)`);
  }
  execFileSync('sh', ['-c', 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server'], { stdio: 'inherit', timeout: 600_000 });
  if (!existsSync(ETCD_BIN)) throw new Error(`installing etcd-server did not provide ${ETCD_BIN}`);
  installChecked = true;
}

/** Distinct free loopback ports (all bound at once, then released). */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}
