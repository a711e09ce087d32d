import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unusedPort } from '../../support/free-port';
import { hasExited } from '../../support/child-exit';

export const HAPROXY_BIN = process.env.HAPROXY_BIN ?? '/usr/sbin/haproxy';

export interface Haproxy {
  url: string;
  close(): Promise<void>;
}

export function hasHaproxy(): boolean {
  return existsSync(HAPROXY_BIN);
}

/** haproxy round-robin over the given loopback ports, health-checking /health, redispatching refused connections. */
export async function startHaproxy(ports: readonly number[], dir: string): Promise<Haproxy> {
  const port = await unusedPort();
  const cfg = join(dir, `haproxy-${port}.cfg`);
  writeFileSync(cfg, [
    'global', '  maxconn 4096',
    'defaults', '  mode http', '  timeout connect 1s', '  timeout client 60s', '  timeout server 60s',
    '  retries 3', '  option redispatch', '  retry-on conn-failure empty-response',
    'frontend api', `  bind 127.0.0.1:${port}`, '  default_backend routers',
    'backend routers', '  balance roundrobin', '  option httpchk GET /health',
    ...ports.map((p, i) => `  server r${i + 1} 127.0.0.1:${p} check inter 500ms fall 2 rise 2`),
    '',
  ].join('\n'));
  const child: ChildProcess = spawn(HAPROXY_BIN, ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited: ${err}`);
    const ok = await fetch(`${url}/health`).then((r) => r.status === 200, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`haproxy not answering: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      if (hasExited(child)) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}
