import type { AxiosInstance } from 'axios';

/** The steady clock in seconds (CLOCK_MONOTONIC, the clock of Python's time.monotonic on Linux). */
export function steadyNowSeconds(): number {
  return Number(process.hrtime.bigint()) / 1e9;
}

export type AlignResult = { ok: true; offset: number; delay: number } | { ok: false; reason: string };

/**
 * Aligns a worker's steady clock with this process's, as TensorRT-LLM's disaggregated server
 * does when no NTP keeps hosts in step: GET /steady_clock_offset answers the worker's receive
 * and transmit times, the NTP formula gives the offset, and POST {offset: -offset} makes the
 * worker add it to the times it reports.
 */
export async function alignSteadyClock(http: AxiosInstance, baseUrl: string, timeoutMs: number): Promise<AlignResult> {
  const url = `${baseUrl}/steady_clock_offset`;
  try {
    const originate = steadyNowSeconds();
    const res = await http.get<{ receive_ts?: unknown; transmit_ts?: unknown }>(url, { timeout: timeoutMs, validateStatus: () => true });
    const destination = steadyNowSeconds();
    const { receive_ts: receive, transmit_ts: transmit } = res.data ?? {};
    if (res.status !== 200 || typeof receive !== 'number' || typeof transmit !== 'number') {
      return { ok: false, reason: `GET answered ${res.status}` };
    }
    const delay = destination - originate - (transmit - receive);
    const offset = (receive - originate + (transmit - destination)) / 2;
    const set = await http.post(url, { offset: -offset }, { timeout: timeoutMs, validateStatus: () => true });
    if (set.status !== 200) return { ok: false, reason: `POST answered ${set.status}` };
    return { ok: true, offset, delay };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}
