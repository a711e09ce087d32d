import { z } from 'zod';
import { faultRuleSchema } from './faults';
import type { SimWorker } from './sim-worker';

/** Body of `POST /sim/control`; every field optional, applied in the order listed. */
export const controlSchema = z
  .object({
    /** Replace all fault rules. */
    faults: z.array(faultRuleSchema).optional(),
    /** Append fault rules. */
    addFaults: z.array(faultRuleSchema).optional(),
    clearFaults: z.boolean().optional(),
    /** "fail" makes GET /health answer 503 until "ok". */
    health: z.enum(['ok', 'fail']).optional(),
    latency: z
      .union([
        z.enum(['zero', 'demo']),
        z
          .object({
            prefillMsPerToken: z.number().min(0).optional(),
            decodeMsPerToken: z.number().min(0).optional(),
            maxBatchSize: z.number().int().min(0).optional(),
            overheadMs: z.number().min(0).optional(),
          })
          .strict(),
      ])
      .optional(),
    resetStats: z.boolean().optional(),
    /** Drop every cached block (emits one `removed` event). */
    clearKv: z.boolean().optional(),
  })
  .strict();

export type ControlRequest = z.infer<typeof controlSchema>;

export interface ControlResult {
  ok: true;
  faults: SimWorker['activeFaults'];
  health: 'ok' | 'fail';
  latency: SimWorker['latency'];
}

export function applyControl(worker: SimWorker, raw: unknown): ControlResult {
  const req = controlSchema.parse(raw);
  if (req.faults) worker.setFaults(req.faults);
  if (req.addFaults) worker.addFaults(req.addFaults);
  if (req.clearFaults) worker.clearFaults();
  if (req.health) worker.setHealthy(req.health === 'ok');
  if (req.latency) worker.setLatency(req.latency);
  if (req.resetStats) worker.resetStats();
  if (req.clearKv) worker.kv.clear();
  return { ok: true, faults: worker.activeFaults, health: worker.isHealthy ? 'ok' : 'fail', latency: worker.latency };
}
