import { Encoder as MsgpackEncoder, decode as msgpackDecode } from '@msgpack/msgpack';
import { Packr } from 'msgpackr';
import { contextRequestBody, generationRequest, parseContextAnswer, type ContextAnswerOk } from '../../../src/disagg/trtllm-protocol';
import { WorkerBody } from '../../../src/disagg/worker-body';
import { contextAnswer } from '../lib/payloads';

/**
 * Encoding cost of a worker request body with token-id prompts of 2k and 9k ids: JSON text
 * (the JSON workers' path) against the two maintained msgpack libraries, msgpackr and
 * @msgpack/msgpack. CPU per encode (process.cpuUsage over a bounded loop, median of rounds),
 * bytes on the wire, and whether an id of TensorRT-LLM's size (>= 2^40, disagg_request_id)
 * stays an integer on the wire, as msgspec writes it. Then the router's whole body work per
 * disaggregated request (context body, and generation body from a context answer echoing 256
 * prompt ids) for JSON workers and for msgpack workers, through the router's own code.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/msgpack/encode-cost.js [--rounds=7 --ms=300]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const ROUNDS = Math.min(Number(args.get('rounds') ?? 7), 50);
/** CPU time per round and candidate (bounded: at most 200,000 encodes a round). */
const ROUND_MS = Math.min(Number(args.get('ms') ?? 300), 5_000);
const MAX_OPS = 200_000;

type Body = Record<string, unknown>;

function contextBody(ids: number): Body {
  return {
    model: 'bench-model',
    prompt: Array.from({ length: ids }, (_, i) => 1000 + ((i * 7919) % 150_000)),
    max_tokens: 256,
    temperature: 0.7,
    top_p: 0.95,
    stream: false,
    stream_options: null,
    disaggregated_params: { request_type: 'context_only', disagg_request_id: 1_234_567_890_123 },
  };
}

interface Candidate {
  name: string;
  /** What was written (its length is the bytes, or the characters of a text). */
  encode(body: Body): { length: number };
}

const packr = new Packr({ useRecords: false });
const encoder = new MsgpackEncoder();
const candidates: Candidate[] = [
  { name: 'JSON.stringify (JSON workers)', encode: (b) => JSON.stringify(b) },
  { name: 'msgpackr Packr.pack', encode: (b) => packr.pack(b) },
  { name: '@msgpack/msgpack Encoder.encode', encode: (b) => encoder.encode(b) },
];

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** CPU microseconds per encode over one round. */
function round(c: Candidate, body: Body): number {
  const start = cpuUs();
  const deadline = performance.now() + ROUND_MS;
  let ops = 0;
  let sink = 0;
  while (ops < MAX_OPS && (ops & 63 || performance.now() < deadline)) {
    sink += c.encode(body).length;
    ops++;
  }
  if (sink < 0) process.stdout.write('');
  return (cpuUs() - start) / ops;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Whether the large id comes back as the same integer (a msgpack int, not a float64). */
function idExact(c: Candidate, body: Body): string {
  const out = c.encode(body);
  if (!(out instanceof Uint8Array)) return 'n/a';
  const id = (body.disaggregated_params as Body).disagg_request_id as number;
  const hex = Buffer.from(out).toString('hex');
  const asUint64 = `cf${id.toString(16).padStart(16, '0')}`;
  const decoded = (msgpackDecode(out) as { disaggregated_params: Body }).disaggregated_params.disagg_request_id;
  return hex.includes(asUint64) && decoded === id ? 'uint64' : 'float64';
}

/** Both bodies of one request, written for JSON or for msgpack workers, as UpstreamDispatch asks for them. */
function requestBodies(client: Body, answer: ContextAnswerOk, encoding: 'json' | 'msgpack'): Candidate {
  const ids = client.prompt as number[];
  return {
    name: `${encoding} workers`,
    encode: () => {
      const ctx = WorkerBody.of(contextRequestBody('completion', client, ids, 1_234_567_890_123, undefined));
      const gen = generationRequest('completion', client, answer, 1_234_567_890_123, undefined);
      return encoding === 'json' ? { length: ctx.json.length + gen.json.length } : { length: ctx.msgpack.length + gen.msgpack.length };
    },
  };
}

function perRequest(lines: string[]): void {
  const parsed = parseContextAnswer(contextAnswer);
  if (!parsed.ok) throw new Error(parsed.problem);
  for (const ids of [2048, 9216]) {
    const client = { model: 'bench-model', prompt: contextBody(ids).prompt, max_tokens: 256, temperature: 0.7, stream: false };
    const both = [requestBodies(client, parsed, 'json'), requestBodies(client, parsed, 'msgpack')];
    for (const c of both) for (let i = 0; i < 200; i++) c.encode(client);
    const samples = new Map<string, number[]>(both.map((c) => [c.name, []]));
    for (let r = 0; r < ROUNDS; r++) for (const c of r % 2 ? [...both].reverse() : both) samples.get(c.name)!.push(round(c, client));
    const json = median(samples.get(both[0].name)!);
    for (const c of both) {
      const us = median(samples.get(c.name)!);
      lines.push(`| ${ids} ids | ${c.name} | ${us.toFixed(1)} | ${(us / json).toFixed(2)} |`);
    }
  }
}

function main(): void {
  const lines = ['| body | encoder | CPU per encode (us) | vs JSON | bytes | large id on the wire |', '|---|---|---|---|---|---|'];
  for (const ids of [2048, 9216]) {
    const body = contextBody(ids);
    for (const c of candidates) for (let i = 0; i < 200; i++) c.encode(body); // warm the JIT
    const samples = new Map<string, number[]>(candidates.map((c) => [c.name, []]));
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? [...candidates].reverse() : candidates;
      for (const c of order) samples.get(c.name)!.push(round(c, body));
    }
    const json = median(samples.get(candidates[0].name)!);
    for (const c of candidates) {
      const us = median(samples.get(c.name)!);
      const out = c.encode(body);
      const bytes = typeof out === 'string' ? Buffer.byteLength(out) : out.length;
      lines.push(`| ${ids} ids | ${c.name} | ${us.toFixed(1)} | ${(us / json).toFixed(2)} | ${bytes} | ${idExact(c, body)} |`);
    }
  }
  const request = ['| client prompt | router writes for | CPU per request (us) | vs JSON |', '|---|---|---|---|'];
  perRequest(request);
  process.stdout.write(`Worker body encoding, median of ${ROUNDS} rounds of ${ROUND_MS} ms CPU each (node ${process.version})\n\n${lines.join('\n')}\n\n`);
  process.stdout.write(`Both bodies of one disaggregated request (context, and generation from a context answer with 256 prompt ids)\n\n${request.join('\n')}\n`);
}

main();
