import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A context and a generation worker (host:port) that answer every call, and keep nothing. */
export interface PlainWorkers {
  ctx: string;
  gen: string;
  close(): void;
}

/** A worker (its host:port) that answers every call as a context or generation worker would. */
export interface PlainWorker {
  server: Server;
  hostPort: string;
  port: number;
  /** Inference calls answered. */
  served(): number;
}

/** A worker that answers every call as a context or generation worker would, and keeps nothing. */
export async function startPlainWorker(): Promise<PlainWorker> {
  let served = 0;
  const server = createServer((req, res) => {
    if (req.url === '/health') return void res.end();
    if (req.url === '/server_info' || req.url === '/kv_cache_events') return void res.end(req.url === '/server_info' ? '{}' : '[]');
    let context = false;
    let tail = '';
    req.on('data', (c: Buffer) => {
      // Only whether this is the context call: the end of the body is enough.
      tail = (tail + c.toString('latin1')).slice(-4096);
      if (tail.includes('"context_only"')) context = true;
    });
    req.on('end', () => {
      served++;
      const choice = context
        ? { index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'length', disaggregated_params: { request_type: 'context_only', ctx_request_id: 1, first_gen_tokens: [1], encoded_opaque_state: 'eA==' } }
        : { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'x', object: 'chat.completion', model: 'm', choices: [choice], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { server, port, hostPort: `127.0.0.1:${port}`, served: () => served };
}

export async function startPlainWorkers(): Promise<PlainWorkers> {
  const [ctx, gen] = [await startPlainWorker(), await startPlainWorker()];
  return { ctx: ctx.hostPort, gen: gen.hostPort, close: () => [ctx, gen].forEach((w) => w.server.close()) };
}

/** The bench base config with `extra`, its context and generation pools on `workers`. */
export function onWorkers(workers: { ctx: string; gen: string }, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    ...extra,
    context_servers: { ...(extra.context_servers as object), urls: [workers.ctx] },
    generation_servers: { ...(extra.generation_servers as object), urls: [workers.gen] },
  };
}
