import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/**
 * The child side of a benchmarked process: tells the runner its port, answers CPU/RSS
 * samples, and exits cleanly on request (so `--cpu-prof` gets written).
 */
export interface ProcStats {
  cpuUserUs: number;
  cpuSystemUs: number;
  rssBytes: number;
}

export type ChildMessage =
  | { type: 'ready'; port: number; ports?: number[] }
  | { type: 'stats'; stats: ProcStats }
  | { type: 'profiled'; file: string }
  | { type: 'error'; message: string };
/**
 * `cpu`: where the time goes; `alloc`: where the bytes the collector later sweeps are allocated;
 * `survivors`: the same for what outlives the young generation only (promoted, or alive at the stop).
 */
export type ProfileMode = 'cpu' | 'alloc' | 'survivors';
export type ParentMessage = { type: 'stats' } | { type: 'stop' } | { type: 'profile-start'; mode: ProfileMode } | { type: 'profile-stop'; file: string };

/** Bytes between two allocation samples: fine enough for a few seconds of requests. */
const ALLOC_SAMPLING_BYTES = 8 * 1024;

/**
 * The V8 CPU profiler (as `node --cpu-prof`), or its sampling heap profiler counting objects
 * collected since (every allocation, not only what survives; with `survivors`, those the
 * young generation collected left out: what was promoted to the old one), started and stopped
 * around the measured window only, so boot and warm-up do not dilute the figures.
 */
let profiler: { session: Session; mode: ProfileMode } | undefined;
function profileCommand(m: ParentMessage, send: (m: ChildMessage) => void): void {
  if (m.type === 'profile-start') {
    const session = new Session();
    session.connect();
    profiler = { session, mode: m.mode };
    if (m.mode === 'cpu') session.post('Profiler.enable', () => session.post('Profiler.start'));
    else {
      const sampling = { samplingInterval: ALLOC_SAMPLING_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: m.mode === 'alloc' };
      session.post('HeapProfiler.enable', () => session.post('HeapProfiler.startSampling', sampling));
    }
  } else if (m.type === 'profile-stop' && profiler) {
    const { session, mode } = profiler;
    const done = (err: Error | null, profile: unknown): void => {
      if (!err) writeFileSync(m.file, JSON.stringify(profile));
      session.disconnect();
      send({ type: 'profiled', file: m.file });
    };
    if (mode === 'cpu') session.post('Profiler.stop', (err, result) => done(err, result?.profile));
    else session.post('HeapProfiler.stopSampling', (err, result) => done(err, result?.profile));
  }
}

export function serveChild(ports: number[], stop: () => Promise<void>): void {
  const send = (m: ChildMessage): void => {
    process.send?.(m);
  };
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'stats') {
      const cpu = process.cpuUsage();
      send({ type: 'stats', stats: { cpuUserUs: cpu.user, cpuSystemUs: cpu.system, rssBytes: process.memoryUsage.rss() } });
    } else if (m.type === 'profile-start' || m.type === 'profile-stop') {
      profileCommand(m, send);
    } else if (m.type === 'stop') {
      const timer = setTimeout(() => process.exit(0), 3000);
      void stop().finally(() => {
        clearTimeout(timer);
        process.exit(0);
      });
    }
  });
  // The runner going away takes its children with it.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', port: ports[0], ports });
}

export function failChild(err: unknown): void {
  const message = (err as Error)?.stack ?? String(err);
  process.send?.({ type: 'error', message } satisfies ChildMessage);
  process.stderr.write(`${message}\n`);
  setTimeout(() => process.exit(1), 100);
}

/** `--key=value` arguments of a child. */
export function argOf(name: string, fallback = ''): string {
  const prefix = `--${name}=`;
  const arg = process.argv.find((a) => a.startsWith(prefix));
  return arg ? arg.slice(prefix.length) : fallback;
}
