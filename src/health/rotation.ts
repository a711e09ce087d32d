import type { Logger } from '@nestjs/common';
import type { EjectionInfo, ServerRegistry, ServerState } from '../servers';

/** Takes a ready server out of rotation (status `unhealthy`); its in-flight requests finish. */
export function ejectServer(registry: ServerRegistry, logger: Logger, server: ServerState, reason: EjectionInfo['reason'], detail: string): void {
  server.ejection = { reason, since: Date.now(), detail };
  logger.warn(`${server.role} server ${server.url} taken out of rotation (${reason}): ${detail}`);
  registry.setStatus(server, 'unhealthy');
}
