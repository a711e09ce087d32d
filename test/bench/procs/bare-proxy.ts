import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { argOf, failChild, serveChild } from '../lib/proc-child';
import { createTransport, type TransportName } from '../lib/transports';
import { responseSink, twoHop } from '../lib/two-hop';

/** node:http server + a chosen HTTP client doing the two hops: the Node line for this job. */
async function main(): Promise<void> {
  const transport = createTransport(argOf('transport', 'undici-pool') as TransportName);
  const up = { ctx: argOf('ctx'), gen: argOf('gen') };
  const server = createServer({ keepAliveTimeout: 120_000 }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end();
        return;
      }
      twoHop(transport, up, body, responseSink(res)).catch((err: Error) => {
        if (!res.headersSent) res.writeHead(502);
        res.end(err.message);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serveChild([(server.address() as AddressInfo).port], async () => {
    server.closeAllConnections();
    await transport.close();
  });
}

main().catch(failChild);
