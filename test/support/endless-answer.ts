import type { IncomingMessage, ServerResponse } from 'node:http';

/** An answer that never ends: 64 KiB chunks for as long as the connection stays open, no length given. */
export function endless(_req: unknown, res: ServerResponse<IncomingMessage>): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const pump = (): void => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump);
  };
  pump();
}
