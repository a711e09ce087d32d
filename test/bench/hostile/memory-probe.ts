import { writeHeapSnapshot } from 'node:v8';

/**
 * Preloaded (`node -r`) into a benchmarked router process started with an IPC channel: answers
 * `memory` with process.memoryUsage() after a full garbage collection (when `--expose-gc` is on),
 * and `snapshot` with the file of a heap snapshot, so a bench can tell a leak (live objects
 * growing) from memory the allocator keeps (RSS above a flat heap).
 */
export type ProbeRequest = { type: 'memory' } | { type: 'snapshot'; file: string };
export interface ProbeMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}
export type ProbeAnswer = { type: 'memory'; memory: ProbeMemory } | { type: 'snapshot'; file: string };

const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (m: ProbeRequest) => {
  if (m.type === 'memory') {
    gc?.();
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    process.send?.({ type: 'memory', memory: { rss, heapUsed, heapTotal, external, arrayBuffers } } satisfies ProbeAnswer);
  } else if (m.type === 'snapshot') {
    gc?.();
    process.send?.({ type: 'snapshot', file: writeHeapSnapshot(m.file) } satisfies ProbeAnswer);
  }
});
// The channel must not keep a router that is shutting down alive.
process.channel?.unref();
