import type { ServerResponse } from 'node:http';
import type { Transport } from './transports';

/** Where a two-hop proxy writes its answer (node:http response, Nest reply, ...). */
export interface AnswerSink {
  json(text: string): void;
  startStream(): void;
  /** Resolves once the chunk may be followed by another (backpressure). */
  write(chunk: Uint8Array): Promise<void> | void;
  end(): void;
}

/** The sink over a node:http response, with backpressure. */
export function responseSink(res: ServerResponse): AnswerSink {
  return {
    json(text) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    },
    startStream() {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    },
    write(chunk) {
      if (res.write(chunk)) return;
      return new Promise<void>((resolve) => res.once('drain', resolve));
    },
    end() {
      res.end();
    },
  };
}

export interface Upstreams {
  ctx: string;
  gen: string;
}

interface ContextAnswer {
  choices: { disaggregated_params: Record<string, unknown> }[];
  prompt_token_ids?: number[];
  usage?: { prompt_tokens: number };
}

const PATH = '/v1/completions';
let nextId = 1;

/**
 * The job disagg-router does, with no framework around it: context_only call, then the
 * generation_only call with the context answer's params and token ids; the answer's
 * usage.prompt_tokens comes from the context phase.
 */
export async function twoHop(t: Transport, up: Upstreams, body: Record<string, unknown>, sink: AnswerSink): Promise<void> {
  const id = nextId++;
  const ctx = (await t.postJson(up.ctx, PATH, JSON.stringify({
    ...body,
    stream: false,
    stream_options: null,
    disaggregated_params: { request_type: 'context_only', disagg_request_id: id },
  }))) as ContextAnswer;
  const choice = ctx.choices[0];
  const genBody = JSON.stringify({
    ...body,
    disaggregated_params: { ...choice.disaggregated_params, request_type: 'generation_only', disagg_request_id: id },
    ...(Array.isArray(ctx.prompt_token_ids) ? { prompt: ctx.prompt_token_ids } : {}),
  });
  if (body.stream !== true) {
    const gen = (await t.postJson(up.gen, PATH, genBody)) as { usage?: Record<string, number> };
    if (gen.usage && ctx.usage) gen.usage.prompt_tokens = ctx.usage.prompt_tokens;
    sink.json(JSON.stringify(gen));
    return;
  }
  const chunks = await t.postStream(up.gen, PATH, genBody);
  sink.startStream();
  for await (const chunk of chunks) {
    const wait = sink.write(chunk);
    if (wait) await wait;
  }
  sink.end();
}
