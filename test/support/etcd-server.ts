import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDebianPackage, serverProcess } from './server-process';

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
  ensureDebianPackage(ETCD_BIN, 'etcd-server', 'ETCD_BIN');
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
  const { start, stop } = serverProcess({ name: `etcd on ${clientUrl}`, bin: ETCD_BIN, args, logFile: join(dataDir, 'etcd.log'), answers: () => answers(clientUrl), pollMs: 50 });

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
