import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status?: { code?: number; message?: string };
  service: string;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

type KeyValues = { key: string; value: AnyValue }[];

function attributesOf(list: KeyValues | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue ?? '';
  }
  return out;
}

/** An OTLP/HTTP traces receiver (JSON encoding) on a loopback port, keeping what it got. */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly contentTypes: string[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        this.contentTypes.push(String(req.headers['content-type']));
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { resource: { attributes: KeyValues }; scopeSpans: { spans: (Omit<ReceivedSpan, 'attributes' | 'service'> & { attributes: KeyValues })[] }[] }[];
        };
        for (const rs of body.resourceSpans) {
          const service = String(attributesOf(rs.resource.attributes)['service.name']);
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) this.spans.push({ ...s, parentSpanId: s.parentSpanId || undefined, attributes: attributesOf(s.attributes), service });
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }
}
