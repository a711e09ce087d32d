import { errors as undiciErrors } from 'undici';
import type { UpstreamFailureKind } from '../common';

/** Classifies a transport error of an upstream call. */
export function classifyTransportError(err: unknown): UpstreamFailureKind {
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) return 'timeout';
  if (err instanceof undiciErrors.ConnectTimeoutError) return 'connect';
  if (err instanceof undiciErrors.RequestAbortedError) return 'aborted';
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  if (e?.name === 'AbortError') return 'aborted';
  const code = e?.code ?? e?.cause?.code;
  if (code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'connect';
  return 'reset';
}

/** An errno code (ECONNREFUSED, ...) says what happened; a free-form message may not be meant for clients. */
export function clientSafeCode(err: unknown, kind: UpstreamFailureKind): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : kind;
}
