import { Pool } from 'undici';
import { chatConversations, type ChatWorkload } from '../lib/chat-workload';
import type { LoadResult } from '../lib/load';

/**
 * Load driver of the multi-turn chat rows, in its own process on the load cpu: every
 * conversation sends its turns one after the other (the next only once the previous is
 * answered), `connections` conversations at a time, taken in turn, so the router sees them
 * interleaved. Bounded by time and by the workload's size (conversations x turns).
 */
interface ChatDriverOptions {
  url: string;
  connections: number;
  seconds: number;
  workload: ChatWorkload;
}

const o = JSON.parse(process.argv[2]) as ChatDriverOptions;

async function main(): Promise<void> {
  const target = new URL(o.url);
  const pool = new Pool(target.origin, { connections: o.connections, pipelining: 1 });
  const conversations = chatConversations(o.workload);
  const next = conversations.map(() => 0);
  const ready = conversations.map((_, i) => i);
  const latencies: number[] = [];
  let errors = 0;
  let non2xx = 0;
  const started = performance.now();
  const deadline = started + o.seconds * 1000;
  const lane = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const c = ready.shift();
      if (c === undefined) return;
      const body = conversations[c][next[c]++];
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.body.dump();
        if (res.statusCode !== 200) non2xx++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t0);
      if (next[c] < conversations[c].length) ready.push(c);
    }
  };
  await Promise.all(Array.from({ length: o.connections }, lane));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const q = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  const result: LoadResult = { requests: latencies.length, seconds, rps: latencies.length / seconds, p50Ms: q(0.5), p99Ms: q(0.99), errors, non2xx };
  process.send?.(result, () => process.exit(0));
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
