import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { FakeHandler, ReceivedRequest } from './fake-worker';
import { json } from './fake-worker';

/** The committed generator: TensorRT-LLM's signed texts, signed with Python's standard hmac. */
const GENERATOR = join(process.cwd(), 'test', 'fixtures', 'trtllm-auth', 'expected_signatures.py');

export type Role = 'context' | 'generation';

export interface ExpectedSignatures {
  'x-trtllm-disagg-auth': string | null;
  'x-trtllm-subagent-affinity-auth': string | null;
}

/** What python3 computes for a request body (null: no such signature is due). */
export function expectedSignatures(key: string, role: Role, body: Record<string, unknown>, affinityId?: string): Promise<ExpectedSignatures> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [GENERATOR], { timeout: 30_000 }, (err, stdout) => {
      if (err) return reject(err);
      resolve(JSON.parse(stdout) as ExpectedSignatures);
    });
    child.stdin!.end(JSON.stringify({ key, role, body, affinity_id: affinityId ?? null }));
  });
}

export interface SignatureCheck {
  path: string;
  /** ok: matched; missing / bad: refused; none: nothing to sign and nothing sent. */
  handoff: 'ok' | 'missing' | 'bad' | 'none';
  affinity: 'ok' | 'bad' | 'none';
  affinityId: string | undefined;
}

function header(req: ReceivedRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * A worker holding `key`, as TensorRT-LLM's checks it: a generation request carrying
 * encoded_opaque_state or ctx_info_endpoint needs a matching x-trtllm-disagg-auth, and an
 * affinity hint a matching x-trtllm-subagent-affinity-auth; otherwise 400 with the worker's
 * message. Every verdict is recorded in `checks`.
 */
export function checkingSignatures(key: string, role: Role, then: FakeHandler, checks: SignatureCheck[]): FakeHandler {
  return async (req, res, worker) => {
    if (!req.path.startsWith('/v1/')) return then(req, res, worker);
    const affinityId = header(req, 'x-trtllm-subagent-affinity-id')?.trim() || undefined;
    const expected = await expectedSignatures(key, role, req.body ?? {}, affinityId);
    const sentHandoff = header(req, 'x-trtllm-disagg-auth');
    const sentAffinity = header(req, 'x-trtllm-subagent-affinity-auth');
    const due = expected['x-trtllm-disagg-auth'];
    const check: SignatureCheck = {
      path: req.path,
      handoff: due === null ? (sentHandoff === undefined ? 'none' : 'bad') : sentHandoff === undefined ? 'missing' : sentHandoff === due ? 'ok' : 'bad',
      affinity: affinityId === undefined ? 'none' : sentAffinity === expected['x-trtllm-subagent-affinity-auth'] ? 'ok' : 'bad',
      affinityId,
    };
    checks.push(check);
    if (check.handoff === 'missing' || check.handoff === 'bad') return json(res, 400, { object: 'error', message: 'Invalid internal disaggregated request authentication', type: 'BadRequestError', code: 400 });
    if (check.affinity === 'bad') return json(res, 400, { object: 'error', message: 'Invalid internal subagent affinity authentication', type: 'BadRequestError', code: 400 });
    return then(req, res, worker);
  };
}
