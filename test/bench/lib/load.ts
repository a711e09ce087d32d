import { execFile, execFileSync, fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatWorkload } from './chat-workload';
import { hasTaskset, LOAD_CPU } from './procs';

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

export interface LoadOptions {
  url: string;
  body: string;
  connections: number;
  seconds: number;
  /** Offered requests per second; unset = closed loop (each connection sends as fast as answered). */
  rate?: number;
  /** Multi-turn chats instead of one body (see chat-workload.ts). */
  chat?: ChatWorkload;
}

export type LoadDriver = 'wrk' | 'autocannon';

export function pickDriver(wanted?: string): LoadDriver {
  if (wanted === 'autocannon') return 'autocannon';
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return 'wrk';
  } catch (err) {
    // wrk --version exits 1 after printing; only a missing binary is ENOENT.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'autocannon' : 'wrk';
  }
}

const WRK_SCRIPT = `
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.body = f:read("*a")
f:close()
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCHJSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%f,"p99_us":%f}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
`;

function runWrk(o: LoadOptions, workDir: string): Promise<LoadResult> {
  const script = join(workDir, 'post.lua');
  const bodyFile = join(workDir, 'body.json');
  writeFileSync(script, WRK_SCRIPT);
  writeFileSync(bodyFile, o.body);
  const wrkArgs = ['-t1', `-c${o.connections}`, `-d${o.seconds}s`, '--timeout', '10s', '-s', script, o.url];
  const [cmd, args] = hasTaskset() ? ['taskset', ['-c', LOAD_CPU, 'wrk', ...wrkArgs]] : ['wrk', wrkArgs];
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env: { ...process.env, BENCH_BODY_FILE: bodyFile }, timeout: (o.seconds + 30) * 1000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`wrk failed: ${err.message} ${stderr}`));
      const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
      if (!line) return reject(new Error(`wrk printed no result: ${stdout}`));
      const r = JSON.parse(line.slice('BENCHJSON '.length)) as { requests: number; duration_us: number; errors: number; non2xx: number; p50_us: number; p99_us: number };
      const seconds = r.duration_us / 1e6;
      resolve({ requests: r.requests, seconds, rps: r.requests / seconds, p50Ms: r.p50_us / 1000, p99Ms: r.p99_us / 1000, errors: r.errors, non2xx: r.non2xx });
    });
  });
}

/** Runs a driver script in its own process on the load cpu; it sends back one LoadResult. */
function runForkedDriver(o: Pick<LoadOptions, 'url' | 'connections' | 'seconds'> & Partial<LoadOptions> & { workload?: ChatWorkload }, script: string): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(script, [JSON.stringify(o)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    if (hasTaskset() && child.pid) {
      try {
        execFileSync('taskset', ['-a', '-cp', LOAD_CPU, String(child.pid)], { stdio: 'ignore' });
      } catch {
        /* best effort */
      }
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), (o.seconds + 30) * 1000);
    child.once('message', (m: LoadResult) => {
      clearTimeout(timer);
      resolve(m);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`load driver ${script} exited with ${code}`));
    });
  });
}

export interface LoadContext {
  workDir: string;
  autocannonScript: string;
  pacedScript: string;
  chatScript: string;
}

export function runLoad(driver: LoadDriver, o: LoadOptions, ctx: LoadContext): Promise<LoadResult> {
  if (o.chat) return runForkedDriver({ url: o.url, connections: o.connections, seconds: o.seconds, workload: o.chat }, ctx.chatScript);
  if (o.rate) return runForkedDriver(o, ctx.pacedScript);
  return driver === 'wrk' ? runWrk(o, ctx.workDir) : runForkedDriver(o, ctx.autocannonScript);
}
