import type { Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientGoneError, HttpApiError } from '../common';
import { writeOpenAiError } from '../common/errors/error-response';
import type { RequestEvents } from '../request-events';
import { FastifyClientChannel } from './fastify-client-channel';

/** A front door's own checks of a request; a refusal is reported as a `refused` request event. */
export function checkedRequest<T>(events: RequestEvents, req: FastifyRequest, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof HttpApiError) events.emit('refused', { requestId: req.id, status: err.getStatus() });
    throw err;
  }
}

/**
 * Runs a validated request's flow on its hijacked reply: a client that left is logged and its
 * answer ended, the shutdown drain's stop is a 503, anything else an OpenAI-style error.
 */
export async function serveOnChannel(
  req: FastifyRequest,
  reply: FastifyReply,
  logger: Logger,
  stopSignal: AbortSignal | undefined,
  run: (channel: FastifyClientChannel) => Promise<void>,
): Promise<void> {
  const channel = new FastifyClientChannel(reply, req.id, stopSignal);
  try {
    await run(channel);
  } catch (err) {
    if (err instanceof ClientGoneError && channel.stoppedForShutdown) {
      writeOpenAiError(channel.raw, new HttpApiError(503, 'the router is shutting down', { code: 'shutting_down' }), logger, req.id);
      return;
    }
    if (err instanceof ClientGoneError) {
      logger.log(`[${req.id}] client disconnected; upstream calls aborted`);
      channel.end();
      return;
    }
    writeOpenAiError(channel.raw, err, logger, req.id);
  }
}
