import axios, { type AxiosInstance } from 'axios';
import { Agent as HttpAgent } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import { HttpSessionProvider } from '../../../src/http-session/http-session.provider';
import { DEFAULT_HTTP_SESSION_OPTIONS } from '../../../src/http-session/http-session.options';

/** The HTTP client of a two-hop proxy: one JSON call and one streamed call per request. */
export interface Transport {
  postJson(origin: string, path: string, body: string): Promise<unknown>;
  postStream(origin: string, path: string, body: string): Promise<AsyncIterable<Uint8Array>>;
  close(): Promise<void>;
}

export const TRANSPORTS = ['undici-pool', 'session-request', 'session-request+signal', 'session-axios', 'axios-http', 'axios-fetch'] as const;
export type TransportName = (typeof TRANSPORTS)[number];

const JSON_HEADERS = { 'content-type': 'application/json' };
const CONNECTIONS = 128;

/** Raw undici, one Pool per origin: the bare Node line. */
function undiciPool(): Transport {
  const pools = new Map<string, Pool>();
  const pool = (origin: string): Pool => {
    let p = pools.get(origin);
    if (!p) pools.set(origin, (p = new Pool(origin, { connections: CONNECTIONS, keepAliveTimeout: 60_000 })));
    return p;
  };
  return {
    async postJson(origin, path, body) {
      const res = await pool(origin).request({ path, method: 'POST', headers: JSON_HEADERS, body });
      return JSON.parse(await res.body.text());
    },
    async postStream(origin, path, body) {
      const res = await pool(origin).request({ path, method: 'POST', headers: { ...JSON_HEADERS, accept: 'text/event-stream' }, body });
      return res.body;
    },
    async close() {
      await Promise.all([...pools.values()].map((p) => p.destroy()));
    },
  };
}

/**
 * The router's own session (undici Agent), through its raw request() hot path; with a
 * per-request AbortSignal as the router passes (client disconnects abort upstream calls).
 */
function sessionRequest(session: HttpSessionProvider, withSignal: boolean): Transport {
  const signal = (): AbortSignal | undefined => (withSignal ? new AbortController().signal : undefined);
  return {
    async postJson(origin, path, body) {
      const res = await session.request({ origin, path, method: 'POST', headers: JSON_HEADERS, body, signal: signal() });
      return JSON.parse(await res.body.text());
    },
    async postStream(origin, path, body) {
      const res = await session.request({ origin, path, method: 'POST', headers: { ...JSON_HEADERS, accept: 'text/event-stream' }, body, signal: signal() });
      return res.body;
    },
    close: () => session.onModuleDestroy(),
  };
}

function viaAxios(client: AxiosInstance, close: () => Promise<void>, fetchStreams = false): Transport {
  return {
    async postJson(origin, path, body) {
      const res = await client.post(origin + path, body, { headers: JSON_HEADERS });
      return res.data;
    },
    async postStream(origin, path, body) {
      const res = await client.post(origin + path, body, {
        headers: { ...JSON_HEADERS, accept: 'text/event-stream' },
        responseType: 'stream',
      });
      // The fetch adapter yields a web ReadableStream, the others a Node Readable; both iterate.
      return (fetchStreams ? res.data : res.data as Readable) as AsyncIterable<Uint8Array>;
    },
    close,
  };
}

function openSession(): HttpSessionProvider {
  const session = new HttpSessionProvider({ ...DEFAULT_HTTP_SESSION_OPTIONS, connectionsPerServer: CONNECTIONS });
  session.onModuleInit();
  return session;
}

export function createTransport(name: TransportName): Transport {
  switch (name) {
    case 'undici-pool':
      return undiciPool();
    case 'session-request':
      return sessionRequest(openSession(), false);
    case 'session-request+signal':
      return sessionRequest(openSession(), true);
    case 'session-axios': {
      const session = openSession();
      return viaAxios(session.axios, () => session.onModuleDestroy());
    }
    case 'axios-http': {
      const agent = new HttpAgent({ keepAlive: true, maxSockets: CONNECTIONS });
      return viaAxios(axios.create({ adapter: 'http', httpAgent: agent, maxRedirects: 0 }), async () => agent.destroy());
    }
    case 'axios-fetch':
      return viaAxios(axios.create({ adapter: 'fetch', maxRedirects: 0 }), async () => undefined, true);
  }
}
