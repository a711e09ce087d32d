import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatContextAnswer, chatGenerationAnswer, chatStreamEvents, contextAnswer, generationAnswer, streamEvents } from '../lib/payloads';
import { argOf, failChild, serveChild } from '../lib/proc-child';

/**
 * Near-zero-cost fake workers: one port answering as a context server, one as a generation
 * server, from precomputed buffers. Stream chunks go out one per event-loop turn, as a
 * decoding worker's would, so the router sees them as separate reads.
 */
const ctxBuf = Buffer.from(contextAnswer);
const genBuf = Buffer.from(generationAnswer);
const events = streamEvents();
// Chat requests (the Messages API rows) get the same answers in chat shape.
const chatCtxBuf = Buffer.from(chatContextAnswer);
const chatGenBuf = Buffer.from(chatGenerationAnswer);
const chatEvents = chatStreamEvents();
const isChat = (req: IncomingMessage): boolean => req.url === '/v1/chat/completions';

/**
 * A context server answers with the prompt it was given (docs/protocol.md "Context answer"):
 * a completion whose prompt is a list of token ids gets those ids back as prompt_token_ids,
 * spliced as its bytes into the precomputed answer, so the 2k-id rows relay 2k ids to the
 * generation server as they would with real workers (text prompts keep the fixed 256).
 */
const IDS_MEMBER = Buffer.from('"prompt_token_ids":[');
const ctxIdsStart = ctxBuf.indexOf(IDS_MEMBER) + IDS_MEMBER.length - 1;
const ctxHead = ctxBuf.subarray(0, ctxIdsStart);
const ctxTail = ctxBuf.subarray(ctxBuf.indexOf(']', ctxIdsStart) + 1);
const PROMPT_IDS = Buffer.from('"prompt":[');
const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;

function contextAnswerFor(body: Buffer): Buffer {
  const at = body.indexOf(PROMPT_IDS);
  const start = at + PROMPT_IDS.length - 1;
  if (at < 0 || !isDigit(body[start + 1])) return ctxBuf;
  const end = body.indexOf(']', start);
  return end < 0 ? ctxBuf : Buffer.concat([ctxHead, body.subarray(start, end + 1), ctxTail]);
}
const STREAM_MARK = Buffer.from('"stream":true');

function readBody(req: IncomingMessage, done: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
}

function common(req: IncomingMessage, res: ServerResponse): boolean {
  const url = req.url ?? '/';
  if (url === '/health') {
    res.writeHead(200, { 'content-length': 0 }).end();
    return true;
  }
  // /v1/traces: an OTLP/HTTP sink for the tracing rows (accepts and drops the spans).
  if (url === '/server_info' || url === '/kv_cache_events' || url === '/v1/models' || url === '/v1/traces') {
    const body = url === '/kv_cache_events' ? '[]' : url === '/v1/models' ? '{"object":"list","data":[]}' : '{}';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    return true;
  }
  return false;
}

function sendJson(res: ServerResponse, buf: Buffer): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': buf.length });
  res.end(buf);
}

function sendStream(res: ServerResponse, events: Buffer[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let i = 0;
  const next = (): void => {
    if (res.destroyed) return;
    if (i === events.length - 1) {
      res.end(events[i]);
      return;
    }
    res.write(events[i++]);
    setImmediate(next);
  };
  next();
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void, port: number): Promise<number> {
  const server = createServer({ keepAliveTimeout: 120_000 }, handler);
  server.maxRequestsPerSocket = 0;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function main(): Promise<void> {
  const ctxPort = await listen((req, res) => {
    if (common(req, res)) return;
    readBody(req, (body) => sendJson(res, isChat(req) ? chatCtxBuf : contextAnswerFor(body)));
  }, Number(argOf('ctx-port', '0')));
  const genPort = await listen((req, res) => {
    if (common(req, res)) return;
    const chat = isChat(req);
    readBody(req, (body) => (body.includes(STREAM_MARK) ? sendStream(res, chat ? chatEvents : events) : sendJson(res, chat ? chatGenBuf : genBuf)));
  }, Number(argOf('gen-port', '0')));
  serveChild([ctxPort, genPort], async () => undefined);
}

main().catch(failChild);
