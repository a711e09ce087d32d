import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { BenchProc } from './procs';
import { pin } from './procs';
import { hasExited } from '../../support/child-exit';

/** nginx (Debian package) as a one-hop reverse proxy reference, when it is installed. */
export function hasNginx(): boolean {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const CLK_TCK_US = 10_000; // USER_HZ = 100 on Linux

function ticksOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

function workersOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function startNginx(upstreamPort: number, workDir: string, cpus: string): Promise<BenchProc> {
  const dir = join(workDir, 'nginx');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log error;
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream gen { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://gen;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`);
  const child: ChildProcess = spawn('nginx', ['-c', conf, '-p', dir], { stdio: 'ignore' });
  const deadline = Date.now() + 5000;
  let workers: number[] = [];
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    workers = child.pid ? workersOf(child.pid) : [];
    if (workers.length) break;
  }
  if (!workers.length) {
    child.kill();
    throw new Error('nginx did not start');
  }
  for (const w of workers) pin(w, cpus);
  return {
    name: 'nginx',
    ports: [port],
    stats: async () => {
      const ticks = workers.reduce((t, w) => t + ticksOf(w), 0);
      return { cpuUserUs: ticks * CLK_TCK_US, cpuSystemUs: 0, rssBytes: workers.reduce((t, w) => t + rssOf(w), 0) };
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (hasExited(child)) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGQUIT');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
