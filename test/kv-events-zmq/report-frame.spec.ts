import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  decodeReportFrame, encodeEventReportFrame, encodeLoadReportFrame, hmacKeyFromEnv, PythonObject, readPickle, REPORT_CLASSES, writePickle, type KvReport,
} from '../../src/kv-events-zmq';

interface Fixture {
  name: string;
  class: string;
  pickle_hex: string;
  signed_hex: string;
}

// Written by fixtures/gen_kv_report_frames.py with Python's own pickle and hmac modules.
const fixtures = JSON.parse(readFileSync(join(process.cwd(), 'test/kv-events-zmq/fixtures/kv-report-frames.json'), 'utf8')) as { hmac_key_hex: string; frames: Fixture[] };
const key = Buffer.from(fixtures.hmac_key_hex, 'hex');
const frame = (name: string, signed: boolean): Buffer => {
  const f = fixtures.frames.find((x) => x.name === name)!;
  return Buffer.from(signed ? f.signed_hex : f.pickle_hex, 'hex');
};
const decoded = (bytes: Buffer, k: Buffer | undefined): KvReport => {
  const d = decodeReportFrame(bytes, k);
  if (!d.ok) throw new Error(`${d.problem}: ${d.detail}`);
  return d.report;
};

describe('report frames as TensorRT-LLM workers push them', () => {
  it('reads a signed event report pickled by Python, 64-bit hashes exact', () => {
    const r = decoded(frame('events', true), key);
    expect(r).toEqual({
      kind: 'events', workerId: 'inst-a:rank1', namespace: 'ctx', seq: 3, isFullSnapshot: false, sendTs: 1733312345.25,
      events: [
        { type: 'stored', hashes: [12809241085271551977n, 6705859311431260313n] },
        { type: 'removed', hashes: [12809241085271551977n], layerGroupId: 1 },
      ],
    });
  });

  it('reads snapshots and load reports, signed and unsigned', () => {
    const snap = decoded(frame('snapshot', false), undefined);
    expect(snap).toMatchObject({ kind: 'events', workerId: 'inst-a:rank0', namespace: 'gen', seq: 0, isFullSnapshot: true });
    expect(snap.kind === 'events' && snap.events[0].hashes).toEqual([1n, 255n, 65535n, 2147483648n, 9223372036854775807n]);
    expect(decoded(frame('load', true), key)).toEqual({
      kind: 'load', workerId: 'inst-a:rank1', namespace: 'ctx', seq: 41, numActiveRequests: 3, numQueuedRequests: 2, maxBatchSize: 64, numActiveTokens: 4096,
    });
    expect(decoded(frame('legacy_load', false), undefined)).toMatchObject({ kind: 'load', workerId: 'legacy-worker', maxBatchSize: 1 });
  });

  it('drops a frame whose signature does not verify, or that is unsigned when a key is set', () => {
    const tampered = frame('load', true);
    tampered[tampered.length - 40] ^= 1;
    expect(decodeReportFrame(tampered, key)).toMatchObject({ ok: false, problem: 'bad_hmac' });
    expect(decodeReportFrame(frame('load', true), Buffer.from('another key'))).toMatchObject({ ok: false, problem: 'bad_hmac' });
    expect(decodeReportFrame(frame('load', false), key)).toMatchObject({ ok: false, problem: 'bad_hmac' });
    expect(decodeReportFrame(Buffer.alloc(10), key)).toMatchObject({ ok: false, problem: 'bad_hmac' });
  });

  it('refuses a signed frame without a key, other classes and cut pickles as malformed', () => {
    expect(decodeReportFrame(frame('load', true), undefined)).toMatchObject({ ok: false, problem: 'malformed' });
    const hostile = writePickle(new PythonObject('os', 'system', { cmd: 'true' }));
    expect(decodeReportFrame(hostile, undefined)).toMatchObject({ ok: false, problem: 'malformed', detail: 'class os.system is not allowed' });
    const cut = frame('events', false).subarray(0, 100);
    expect(decodeReportFrame(cut, undefined)).toMatchObject({ ok: false, problem: 'malformed' });
    expect(decodeReportFrame(Buffer.from([0x80, 0x04, 0x52, 0x2e]), undefined)).toMatchObject({ ok: false, problem: 'malformed' });
  });

  it('writes the load report byte for byte as Python pickles it', () => {
    const load = decoded(frame('load', false), undefined);
    if (load.kind !== 'load') throw new Error('not a load report');
    expect(encodeLoadReportFrame(load, key).toString('hex')).toBe(frame('load', true).toString('hex'));
  });

  it('reads back what it writes, events with bigints and nested dicts', () => {
    const events = [{ event_id: 1, data: { type: 'stored', parent_hash: null, blocks: [{ type: 'stored_block', block_hash: 2n ** 64n - 1n, lora_id: null }] }, window_size: 4096 }];
    const bytes = encodeEventReportFrame({ workerId: 'w:rank2', namespace: 'gen', seq: 9, events, isFullSnapshot: true, sendTs: 1.5 }, key);
    expect(decoded(bytes, key)).toEqual({
      kind: 'events', workerId: 'w:rank2', namespace: 'gen', seq: 9, isFullSnapshot: true, sendTs: 1.5, events: [{ type: 'stored', hashes: [2n ** 64n - 1n] }],
    });
    const big = Array.from({ length: 2500 }, (_, i) => i * 1_000_003);
    expect(readPickle(writePickle({ xs: big, s: 'x'.repeat(300), neg: -5, f: -0.25 }), { allowedClasses: REPORT_CLASSES })).toEqual({ xs: big, s: 'x'.repeat(300), neg: -5, f: -0.25 });
  });

  it('reads TLLM_CENTRALIZED_ROUTER_HMAC_KEY as base64', () => {
    expect(hmacKeyFromEnv(key.toString('base64'))).toEqual(key);
    expect(hmacKeyFromEnv(undefined)).toBeUndefined();
    expect(hmacKeyFromEnv('')).toBeUndefined();
    expect(() => hmacKeyFromEnv('not base64!')).toThrow('not valid base64');
  });
});
