/**
 * The instance id a worker announces in `GET /server_info` as `worker_id` (TensorRT-LLM's
 * `llm_id`): what its pushed KV reports name it by (see docs/protocol.md
 * "Centralized KV router"). Undefined when the worker announces none.
 */
export function workerIdOf(serverInfo: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const id = serverInfo?.worker_id;
  if (typeof id === 'string' && id.length > 0) return id;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  return undefined;
}
