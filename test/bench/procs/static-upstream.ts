import { decode } from '@msgpack/msgpack';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatContextAnswer, chatGenerationAnswer, chatStreamEvents, contextAnswer, generationAnswer, streamEvents } from '../lib/payloads';
import { argOf, failChild, serveChild } from '../lib/proc-child';

/**
 * Near-zero-cost fake workers: one port answering as a context server, one as a generation
 * server, from precomputed buffers (a context answer with the prompt's ids spliced in). Stream
 * chunks go out one per event-loop turn, as a decoding worker's would, so the router sees them
 * as separate reads.
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
 * generation server as they would with real workers (text completions keep the fixed 256).
 */
const IDS_MEMBER = Buffer.from('"prompt_token_ids":[');
const ctxIdsStart = ctxBuf.indexOf(IDS_MEMBER) + IDS_MEMBER.length - 1;
const ctxHead = ctxBuf.subarray(0, ctxIdsStart);
const ctxTail = ctxBuf.subarray(ctxBuf.indexOf(']', ctxIdsStart) + 1);
const PROMPT_IDS = Buffer.from('"prompt":[');
const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;

function contextAnswerFor(req: IncomingMessage, body: Buffer): Buffer {
  const list = isMsgpack(req) ? msgpackIdList(body, 'prompt') : idListAt(body, PROMPT_IDS);
  return list ? Buffer.concat([ctxHead, list, ctxTail]) : ctxBuf;
}

/** A msgpack body (TensorRT-LLM's header; the encoding rows): its ids decoded and written as JSON. */
const isMsgpack = (req: IncomingMessage): boolean => req.headers['x-trtllm-msgpack'] === '1';

function msgpackIdList(body: Buffer, member: string): Buffer | undefined {
  const ids = (decode(body) as Record<string, unknown>)[member];
  return Array.isArray(ids) && ids.length > 0 && ids.every((id) => Number.isInteger(id)) ? Buffer.from(JSON.stringify(ids)) : undefined;
}

/** The JSON id list (`[` to `]`) after `member` in a request body, if it holds one. */
function idListAt(body: Buffer, member: Buffer): Buffer | undefined {
  const at = body.indexOf(member);
  const start = at + member.length - 1;
  if (at < 0 || !isDigit(body[start + 1])) return undefined;
  const end = body.indexOf(']', start);
  return end < 0 ? undefined : body.subarray(start, end + 1);
}

/**
 * A chat's context answer carries the rendered prompt's ids: those the router sent
 * (`prompt_token_ids`, when it tokenized the chat), else as many stand-in ids as the chat has
 * tokens, about one per CHAT_BYTES_PER_TOKEN bytes of its body (Qwen3 5.0, Llama 3 5.3 on the
 * bench's chats), five digits each as in a 150k vocabulary.
 */
const chatIdsStart = chatCtxBuf.indexOf(IDS_MEMBER) + IDS_MEMBER.length - 1;
const chatHead = chatCtxBuf.subarray(0, chatIdsStart);
const chatTail = chatCtxBuf.subarray(chatCtxBuf.indexOf(']', chatIdsStart) + 1);
const CHAT_BYTES_PER_TOKEN = 5;
const MAX_STAND_IN_IDS = 32_768;
const standIn = Buffer.from(`[${Array.from({ length: MAX_STAND_IN_IDS }, (_, i) => 10_000 + ((i * 7919) % 90_000)).join(',')}`);
const CLOSE = Buffer.from(']');

function chatContextAnswerFor(req: IncomingMessage, body: Buffer): Buffer {
  const sent = isMsgpack(req) ? msgpackIdList(body, 'prompt_token_ids') : idListAt(body, IDS_MEMBER);
  if (sent) return Buffer.concat([chatHead, sent, chatTail]);
  const count = Math.min(Math.max(1, Math.round(body.length / CHAT_BYTES_PER_TOKEN)), MAX_STAND_IN_IDS);
  // Each stand-in id is five digits and a comma: the first `count` end just before the next comma.
  return Buffer.concat([chatHead, standIn.subarray(0, 1 + count * 6 - 1), CLOSE, chatTail]);
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
    readBody(req, (body) => sendJson(res, isChat(req) ? chatContextAnswerFor(req, body) : contextAnswerFor(req, body)));
  }, Number(argOf('ctx-port', '0')));
  const genPort = await listen((req, res) => {
    if (common(req, res)) return;
    const chat = isChat(req);
    readBody(req, (body) => (body.includes(STREAM_MARK) ? sendStream(res, chat ? chatEvents : events) : sendJson(res, chat ? chatGenBuf : genBuf)));
  }, Number(argOf('gen-port', '0')));
  serveChild([ctxPort, genPort], async () => undefined);
}

main().catch(failChild);
