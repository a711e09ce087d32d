import type { RunningRouter } from '../../support/router-app';
import { waitFor } from '../../support/router-app';
import { ServerRegistry } from '../../../src/servers';
import { HttpSessionProvider } from '../../../src/http-session';
import { AdmissionService } from '../../../src/admission';
import { DrainService } from '../../../src/lifecycle';
import { ledger } from './counting-policy';

/** Load counters of every server, as `url: requests/tokens` for readable failures. */
export function loadOf(router: RunningRouter): string[] {
  return router.app
    .get(ServerRegistry)
    .list()
    .filter((s) => s.activeRequests !== 0 || s.activeTokens !== 0)
    .map((s) => `${s.url}: ${s.activeRequests} requests, ${s.activeTokens} tokens`);
}

/** Waits until no request holds a server, an admission slot or a drain count. */
export async function expectSettled(router: RunningRouter, what = 'counters back to zero'): Promise<void> {
  const admission = router.app.get(AdmissionService);
  const drain = router.app.get(DrainService);
  const busy = (): string[] => {
    const out = loadOf(router);
    for (const [name, v] of Object.entries(admission.snapshot())) if (v.in_flight || v.queued) out.push(`admission ${name}: ${JSON.stringify(v)}`);
    if (drain.inFlight) out.push(`drain: ${drain.inFlight} in flight`);
    out.push(...ledger.unbalanced());
    return out;
  };
  try {
    await waitFor(() => busy().length === 0, 5_000, what);
  } catch {
    throw new Error(`${what}: ${busy().join('; ')}`);
  }
}

export function openSessionSockets(router: RunningRouter): number {
  return router.app.get(HttpSessionProvider).openSockets();
}

/** Count of active Timeout handles (unref'd ones included). */
export function timerCount(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}
