import { AbortHandle } from '../http-session/abort-handle';
import type { ClientChannel } from './client-channel';

/** TensorRT-LLM's DisaggScheduleStyle.GENERATION_FIRST, as workers read it. */
export const GENERATION_FIRST = 1;

/**
 * schedule_style generation_first: the generation request goes out together with the context
 * request instead of after its answer. It cannot carry the context answer's params, so it
 * names the context request by id (ctx_request_id = disagg_request_id) and carries the chosen
 * context server's `server_info.disaggregated_params` (where to fetch the KV cache from).
 */
export function generationFirstBodies(
  body: Record<string, unknown>,
  disaggId: number,
  conversationId: unknown,
  ctxServerInfo: Record<string, unknown> | undefined,
): { context: Record<string, unknown>; generation: Record<string, unknown> } {
  const common = {
    disagg_request_id: disaggId,
    schedule_style: GENERATION_FIRST,
    ...(conversationId !== undefined ? { conversation_id: conversationId } : {}),
  };
  const context = { ...body, stream: false, stream_options: null, disaggregated_params: { request_type: 'context_only', ...common } };
  const fromServer = { ...((ctxServerInfo?.disaggregated_params as Record<string, unknown> | undefined) ?? {}) };
  // Workers list their endpoints; a request names one.
  if (Array.isArray(fromServer.ctx_info_endpoint)) fromServer.ctx_info_endpoint = fromServer.ctx_info_endpoint[0];
  const generation = {
    ...body,
    disaggregated_params: { request_type: 'generation_only', ctx_request_id: disaggId, ...common, ...fromServer, disagg_request_id: disaggId },
  };
  return { context, generation };
}

/**
 * The client channel with an abort of its own that also follows the client's: the generation
 * call waits for a KV cache that a failed context call will never send, so it is aborted then.
 */
export function channelWithOwnAbort(channel: ClientChannel): { channel: ClientChannel; abort: AbortHandle } {
  const abort = new AbortHandle();
  if (channel.abort.aborted) abort.abort(channel.abort.reason);
  else channel.abort.once('abort', () => abort.abort(channel.abort.reason));
  const linked: ClientChannel = {
    abort,
    requestId: channel.requestId,
    get headersSent() {
      return channel.headersSent;
    },
    sendJson: (status, text) => channel.sendJson(status, text),
    startStream: (moreNow) => channel.startStream(moreNow),
    write: (chunk) => channel.write(chunk),
    end: () => channel.end(),
  };
  return { channel: linked, abort };
}
