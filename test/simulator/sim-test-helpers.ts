import { createParser } from 'eventsource-parser';

// Test bodies are arbitrary JSON read by assertions; `any` keeps those reads short.
/* eslint-disable @typescript-eslint/no-explicit-any */

export interface JsonResponse<T = Record<string, any>> {
  status: number;
  headers: Headers;
  body: T;
}

export async function postJson<T = Record<string, any>>(url: string, body: unknown, signal?: AbortSignal): Promise<JsonResponse<T>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as T };
}

export async function getJson<T = Record<string, any>>(url: string): Promise<JsonResponse<T>> {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

/** POSTs a streaming request and parses the SSE body with eventsource-parser. */
export async function postSse(url: string, body: unknown): Promise<{ status: number; contentType: string | null; events: string[] }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const events: string[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e.data) });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  return { status: res.status, contentType: res.headers.get('content-type'), events };
}

/** Polls a condition on the event loop (no fixed sleeps); fails after `timeoutMs`. */
export async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
