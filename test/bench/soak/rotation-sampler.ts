/**
 * Samples the router's /cluster_info while a soak runs, to explain error bursts: each change
 * of a server's state (with the ejection reason) is kept with its time, and every second in
 * which no server of a pool was ready is counted.
 */
interface ServerRow {
  url: string;
  state: string;
  ejected_for?: string;
  circuit?: string;
}

export interface RotationChange {
  t: number;
  role: string;
  url: string;
  state: string;
  reason?: string;
}

export interface RotationReport {
  changes: RotationChange[];
  /** Samples in which a pool had no ready server, by pool. */
  poolEmptySamples: Record<string, number>;
  samples: number;
}

export function sampleRotation(url: string, t0: number, everyMs = 250): { stop(): RotationReport } {
  const last = new Map<string, string>();
  const report: RotationReport = { changes: [], poolEmptySamples: { context: 0, generation: 0 }, samples: 0 };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      try {
        const info = (await (await fetch(`${url}/cluster_info`)).json()) as Record<string, ServerRow[]>;
        report.samples++;
        for (const role of ['context', 'generation']) {
          const rows = info[`${role}_servers`] ?? [];
          if (!rows.some((r) => r.state === 'ready')) report.poolEmptySamples[role]++;
          for (const r of rows) {
            const key = `${role} ${r.url}`;
            const state = `${r.state}${r.ejected_for ? `:${r.ejected_for}` : ''}`;
            if (last.get(key) === state) continue;
            last.set(key, state);
            if (report.changes.length < 500) report.changes.push({ t: Math.round((Date.now() - t0) / 100) / 10, role, url: r.url, state: r.state, reason: r.ejected_for });
          }
        }
      } catch {
        /* the router is busy or gone: next sample */
      } finally {
        busy = false;
      }
    })();
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return report;
    },
  };
}
