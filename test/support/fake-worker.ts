import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Unpackr } from 'msgpackr';

/** Decodes msgpack bodies with another library than the router's, so the bytes are checked as msgpack, not as what our encoder writes. */
const unpackr = new Unpackr({ int64AsType: 'number', mapsAsObjects: true });

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | undefined;
  /** `msgpack` for a body flagged `X-TRTLLM-Msgpack: 1`. */
  encoding: 'json' | 'msgpack';
  raw: Buffer;
}

export type FakeHandler = (req: ReceivedRequest, res: ServerResponse, worker: FakeWorker) => void | Promise<void>;

/**
 * A tiny scriptable worker on a real loopback socket, for tests that need exact control of
 * what an upstream answers (the simulator covers realistic behaviour).
 */
export class FakeWorker {
  readonly received: ReceivedRequest[] = [];
  readonly sockets = new Set<Socket>();
  /** Requests whose client side closed before the answer was complete. */
  aborted = 0;
  /** What /server_info answers: 404 plays a worker that has none (older TensorRT-LLM, other engines). */
  serverInfoStatus = 200;
  private server?: Server;
  url = '';
  port = 0;
  /** Body of the next POST /kv_cache_events answer (JSON text; bigints need serializeKvEvents). */
  kvEvents: () => string = () => '[]';
  /** Body of GET /server_info. */
  serverInfo: Record<string, unknown> = {};
  /** Plays a TensorRT-LLM worker older than msgpack bodies: a flagged body gets FastAPI's 400. */
  refusesMsgpack = false;

  constructor(public handler: FakeHandler) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.onRequest(req, res));
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  requests(path: string): ReceivedRequest[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const msgpack = req.headers['x-trtllm-msgpack'] === '1';
    const refused = msgpack && this.refusesMsgpack;
    const received: ReceivedRequest = {
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0],
      headers: req.headers,
      body: !raw.length || refused ? undefined : ((msgpack ? unpackr.unpack(raw) : JSON.parse(raw.toString('utf8'))) as Record<string, unknown>),
      encoding: msgpack ? 'msgpack' : 'json',
      raw,
    };
    if (received.path !== '/health') this.received.push(received);
    res.once('close', () => {
      if (!res.writableFinished) this.aborted++;
    });
    if (refused) return json(res, 400, { detail: 'There was an error parsing the body' });
    if (received.path === '/health') return void res.writeHead(200).end();
    if (received.path === '/server_info') return json(res, this.serverInfoStatus, this.serverInfoStatus === 200 ? this.serverInfo : { detail: 'Not Found' });
    if (received.path === '/kv_cache_events') {
      const text = this.kvEvents();
      return void res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    }
    await this.handler(received, res, this);
  }
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A minimal but protocol-correct context/generation pair of handlers. */
export function contextHandler(opts: { finishReason?: string; promptTokenIds?: number[] } = {}): FakeHandler {
  return (req, res) => {
    const body = req.body ?? {};
    const dp = body.disaggregated_params as Record<string, unknown> | undefined;
    const ids = opts.promptTokenIds ?? [1, 2, 3, 4, 5];
    json(res, 200, {
      id: 'cmpl-ctx',
      object: req.path.includes('chat') ? 'chat.completion' : 'text_completion',
      model: body.model,
      choices: [
        {
          index: 0,
          ...(req.path.includes('chat') ? { message: { role: 'assistant', content: 'A' } } : { text: 'A' }),
          finish_reason: opts.finishReason ?? 'length',
          disaggregated_params: {
            request_type: 'context_only',
            ctx_request_id: 777,
            first_gen_tokens: [42],
            encoded_opaque_state: 'b3BhcXVl',
            draft_tokens: null,
            disagg_request_id: dp?.disagg_request_id,
          },
        },
      ],
      prompt_token_ids: ids,
      usage: { prompt_tokens: ids.length, completion_tokens: 1, total_tokens: ids.length + 1, prompt_tokens_details: { cached_tokens: 2 } },
    });
  };
}

export function generationHandler(opts: { chunks?: number } = {}): FakeHandler {
  return async (req, res) => {
    const body = req.body ?? {};
    const chat = req.path.includes('chat');
    const n = opts.chunks ?? 3;
    const usage = { prompt_tokens: 999, completion_tokens: n, total_tokens: 999 + n, prompt_tokens_details: { cached_tokens: 999 } };
    if (!body.stream) {
      json(res, 200, {
        id: 'cmpl-gen',
        object: chat ? 'chat.completion' : 'text_completion',
        model: body.model,
        choices: [{ index: 0, ...(chat ? { message: { role: 'assistant', content: 'A'.repeat(n) } } : { text: 'A'.repeat(n) }), finish_reason: 'length' }],
        usage,
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < n; i++) {
      const choice = chat ? { index: 0, delta: i === 0 ? { role: 'assistant', content: 'A' } : { content: 'A' }, finish_reason: i === n - 1 ? 'length' : null } : { index: 0, text: 'A', finish_reason: i === n - 1 ? 'length' : null };
      res.write(`data: ${JSON.stringify({ id: 'cmpl-gen', object: chat ? 'chat.completion.chunk' : 'text_completion', model: body.model, choices: [choice] })}\n\n`);
    }
    const includeUsage = (body.stream_options as Record<string, unknown> | undefined)?.include_usage;
    if (includeUsage) res.write(`data: ${JSON.stringify({ id: 'cmpl-gen', object: chat ? 'chat.completion.chunk' : 'text_completion', choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}
