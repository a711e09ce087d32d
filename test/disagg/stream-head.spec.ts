import { describe, expect, it } from '@jest/globals';
import { request, type IncomingMessage } from 'node:http';
import type { ServerResponse } from 'node:http';
import { useFakeCluster } from '../support/router-cluster';

describe('the head of a streamed answer', () => {
  let held: ServerResponse | undefined;
  // The generation worker sends its head, then no event until the test releases it.
  const cluster = useFakeCluster(
    {},
    {
      gen: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        held = res;
      },
    },
  );

  it('reaches the client while the generation server is still silent, and the events follow', async () => {
    const body = JSON.stringify({ model: 'm', prompt: 'hello', stream: true });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(`${cluster.router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    // The head is here and not one event has been sent upstream yet.
    expect(held).toBeDefined();
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((resolve) => res.on('end', resolve));
    held!.write('data: {"choices":[{"index":0,"text":"A","finish_reason":null}]}\n\n');
    held!.end('data: [DONE]\n\n');
    await ended;
    expect(Buffer.concat(chunks).toString()).toBe('data: {"choices":[{"index":0,"text":"A","finish_reason":null}]}\n\ndata: [DONE]\n\n');
  });
});
