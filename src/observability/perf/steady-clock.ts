import type { WorkerClient } from '../../worker-client';

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
export async function alignSteadyClock(workers: WorkerClient, baseUrl: string, timeoutMs: number): Promise<AlignResult> {
  try {
    const originate = steadyNowSeconds();
    const reading = await workers.readSteadyClock(baseUrl, timeoutMs);
    const destination = steadyNowSeconds();
    const { receiveTs: receive, transmitTs: transmit } = reading;
    if (reading.status !== 200 || receive === undefined || transmit === undefined) {
      return { ok: false, reason: `GET answered ${reading.status}` };
    }
    const delay = destination - originate - (transmit - receive);
    const offset = (receive - originate + (transmit - destination)) / 2;
    const status = await workers.setSteadyClockOffset(baseUrl, -offset, timeoutMs);
    if (status !== 200) return { ok: false, reason: `POST answered ${status}` };
    return { ok: true, offset, delay };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}
