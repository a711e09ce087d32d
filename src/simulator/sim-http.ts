import type * as http from 'node:http';
import { errorBody } from './openai-response';

export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/** The request body as text, or a 413 once it passes `limit` bytes (the rest is not read). */
export function readBody(req: http.IncomingMessage, limit: number, res: http.ServerResponse, done: (text: string) => void): void {
  readBodyBytes(req, limit, res, (bytes) => done(bytes.toString('utf8')));
}

/** The request body as bytes, or a 413 once it passes `limit` bytes (the rest is not read). */
export function readBodyBytes(req: http.IncomingMessage, limit: number, res: http.ServerResponse, done: (bytes: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (c: Buffer) => {
    if (over) return;
    size += c.length;
    if (size <= limit) return void chunks.push(c);
    over = true;
    chunks.length = 0;
    res.once('finish', () => req.destroy());
    sendJson(res, 413, errorBody(`request body larger than ${limit} bytes`, 413, 'RequestTooLarge'));
  });
  req.on('end', () => {
    if (!over) done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  });
}

export function sendJson(res: http.ServerResponse, status: number, body: string, headers?: Readonly<Record<string, string>>): void {
  const head = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  res.writeHead(status, headers ? { ...head, ...headers } : head);
  res.end(body);
}

export function sendText(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The host part of the worker's URL: a wildcard listen address is reached on loopback. */
export function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '' ) return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
