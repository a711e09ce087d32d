import autocannon from 'autocannon';
import type { LoadOptions, LoadResult } from '../lib/load';

/** Fallback load driver (when wrk is not installed), in its own process like wrk. */
const o = JSON.parse(process.argv[2]) as LoadOptions;
autocannon(
  { url: o.url, method: 'POST', headers: { 'content-type': 'application/json' }, body: o.body, connections: o.connections, duration: o.seconds },
  (err, r) => {
    if (err) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    const result: LoadResult = {
      requests: r.requests.total,
      seconds: r.duration,
      rps: r.requests.total / r.duration,
      p50Ms: r.latency.p50,
      p99Ms: r.latency.p99,
      errors: r.errors + r.timeouts,
      non2xx: r.non2xx,
    };
    process.send?.(result, () => process.exit(0));
  },
);
