import { createParser } from 'eventsource-parser';

/** Reads an SSE response body with a real SSE parser; returns the data payloads in order. */
export async function readSse(res: Response): Promise<string[]> {
  const events: string[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e.data) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  return events;
}

export function postStream(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}
