import type { WorkerClient } from '../../worker-client';

/** The steady clock in seconds (CLOCK_MONOTONIC, the clock of Python's time.monotonic on Linux). */
export function steadyNowSeconds(): number {
  return Number(process.hrtime.bigint()) / 1e9;
}

export type AlignResult = { ok: true; offset: number; delay: number } | { ok: false; reason: string };

/** Exchanges per alignment: the one with the shortest round trip wins (its error is at most half of it). */
export const ALIGN_EXCHANGES = 3;

/**
 * Aligns a worker's steady clock with this process's, as TensorRT-LLM's disaggregated server
 * does when no NTP keeps hosts in step: GET /steady_clock_offset answers the worker's receive
 * and transmit times, the NTP formula gives the offset, and POST {offset: -offset} makes the
 * worker add it to the times it reports. Unlike TensorRT-LLM's single exchange, the GET is
 * repeated and the sample with the least delay kept, as NTP does: one exchange delayed on a busy
 * host would otherwise skew every time the worker reports by half that delay.
 */
export async function alignSteadyClock(workers: WorkerClient, baseUrl: string, timeoutMs: number): Promise<AlignResult> {
  try {
    let best: { offset: number; delay: number } | undefined;
    for (let i = 0; i < ALIGN_EXCHANGES; i++) {
      const sample = await exchange(workers, baseUrl, timeoutMs);
      if ('reason' in sample) return { ok: false, reason: sample.reason };
      if (!best || sample.delay < best.delay) best = sample;
    }
    const status = await workers.setSteadyClockOffset(baseUrl, -best!.offset, timeoutMs);
    if (status !== 200) return { ok: false, reason: `POST answered ${status}` };
    return { ok: true, ...best! };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

async function exchange(workers: WorkerClient, baseUrl: string, timeoutMs: number): Promise<{ offset: number; delay: number } | { reason: string }> {
  const originate = steadyNowSeconds();
  const reading = await workers.readSteadyClock(baseUrl, timeoutMs);
  const destination = steadyNowSeconds();
  const { receiveTs: receive, transmitTs: transmit } = reading;
  if (reading.status !== 200 || receive === undefined || transmit === undefined) return { reason: `GET answered ${reading.status}` };
  return { delay: destination - originate - (transmit - receive), offset: (receive - originate + (transmit - destination)) / 2 };
}
