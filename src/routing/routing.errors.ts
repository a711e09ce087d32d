import type { ServerRole } from '../config';

/** No usable server in a pool (all excluded, draining or unhealthy): a 503 for the client. */
export class NoServerAvailableError extends Error {
  constructor(
    readonly role: ServerRole,
    excluded: readonly string[] = [],
  ) {
    super(
      excluded.length
        ? `no ${role} server available (excluded: ${excluded.join(', ')})`
        : `no ${role} server available`,
    );
    this.name = 'NoServerAvailableError';
  }
}
