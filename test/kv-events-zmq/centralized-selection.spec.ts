import { describe, expect, it } from '@jest/globals';
import { CentralizedKvState, MAX_REPORTING_WORKERS, parseWorkerId, selectWorker, type KvReport, type SelectionParams } from '../../src/kv-events-zmq';

const params = (over: Partial<SelectionParams> = {}): SelectionParams => ({
  tokensPerBlock: 32, loadWeight: 0.25, rankRoutingAlgo: 'instance', fairShareMultiplier: 2, matchRateThreshold: 0.1, loadSuspendS: 3, ...over,
});
const h = (...xs: number[]) => xs.map(BigInt);
const seqs = new Map<string, number>();
const next = (key: string) => {
  const n = (seqs.get(key) ?? -1) + 1;
  seqs.set(key, n);
  return n;
};
const stored = (workerId: string, hashes: bigint[], layerGroupId?: number, full = false): KvReport => ({
  kind: 'events', workerId, namespace: 'ctx', seq: next(`e${workerId}`), isFullSnapshot: full, sendTs: 0, events: [{ type: 'stored', hashes, ...(layerGroupId !== undefined ? { layerGroupId } : {}) }],
});
const removed = (workerId: string, hashes: bigint[], layerGroupId?: number): KvReport => ({
  kind: 'events', workerId, namespace: 'ctx', seq: next(`e${workerId}`), isFullSnapshot: false, sendTs: 0, events: [{ type: 'removed', hashes, ...(layerGroupId !== undefined ? { layerGroupId } : {}) }],
});
const load = (workerId: string, active = 0, tokens = 0): KvReport => ({
  kind: 'load', workerId, namespace: 'ctx', seq: next(`l${workerId}`), numActiveRequests: active, numQueuedRequests: 0, maxBatchSize: 64, numActiveTokens: tokens,
});

function world(): { state: CentralizedKvState; clock: { t: number }; pick: (hashes: bigint[], p?: Partial<SelectionParams>) => ReturnType<typeof selectWorker> } {
  const clock = { t: 1000 };
  const state = new CentralizedKvState(() => clock.t);
  return { state, clock, pick: (hashes, p) => selectWorker(state, 'ctx', hashes, params(p), () => true) };
}

describe('centralized KV router state and selection (TensorRT-LLM semantics)', () => {
  it('parses per-rank worker ids', () => {
    expect(parseWorkerId('inst_abc:rank7')).toEqual(['inst_abc', 7]);
    expect(parseWorkerId('a:b:c:rank3')).toEqual(['a:b:c', 3]);
    expect(parseWorkerId('legacy')).toEqual(['legacy', undefined]);
    expect(parseWorkerId('x:rankX')).toEqual(['x:rankX', undefined]);
  });

  it('picks the instance by its ranks combined, then the rank by its own match or load', () => {
    const { state, pick } = world();
    for (const r of [stored('i0:rank0', h(1, 2)), stored('i0:rank1', h(1, 2, 3, 4)), load('i0:rank0'), load('i0:rank1')]) state.apply(r);
    expect(pick(h(1, 2, 3, 4))).toEqual({ workerId: 'i0', matchedBlocks: 4, dpRank: 1 });
    state.apply(stored('i0:rank0', h(3, 4)));
    state.apply(load('i0:rank1', 10));
    expect(pick(h(1, 2, 3, 4), { loadWeight: 1 })?.dpRank).toBe(0);
  });

  it('prefers the better-matching instance, the less loaded one on equal matches, whole workers alongside', () => {
    const { state, pick } = world();
    for (const r of [stored('i0:rank0', h(1, 2, 3, 4)), load('i0:rank0'), stored('i1:rank0', h(1, 2)), load('i1:rank0'), stored('whole', h(1, 2, 3, 4, 5)), load('whole')]) state.apply(r);
    expect(pick(h(1, 2, 3, 4, 5))).toEqual({ workerId: 'whole', matchedBlocks: 5 });
    expect(pick(h(1, 2, 3, 4))).toMatchObject({ matchedBlocks: 4 });
    state.apply(load('i0:rank0', 20));
    expect(pick(h(1, 2), { loadWeight: 1 })?.workerId).toBe('i1');
  });

  it('keeps a block on the instance until its last rank and last layer group drop it', () => {
    const { state, pick } = world();
    for (const r of [stored('i0:rank0', h(1, 2)), stored('i0:rank1', h(1, 3)), load('i0:rank0'), load('i0:rank1')]) state.apply(r);
    state.apply(removed('i0:rank0', h(1, 2)));
    expect(pick(h(1, 3))?.matchedBlocks).toBe(2);
    state.apply(removed('i0:rank1', h(1)));
    expect(pick(h(1, 3))?.matchedBlocks).toBe(0);

    state.apply(stored('i0:rank0', h(7, 8), 0));
    state.apply(stored('i0:rank0', h(7, 8), 1));
    state.apply(removed('i0:rank0', h(7, 8), 0));
    expect(pick(h(7, 8))?.matchedBlocks).toBe(2);
    state.apply(removed('i0:rank0', h(7, 8), 1));
    expect(pick(h(7, 8))?.matchedBlocks).toBe(0);
  });

  it('replaces a rank on a full snapshot and drops reports whose seq is not newer', () => {
    const { state, pick } = world();
    for (const r of [stored('i0:rank0', h(1, 2, 3)), stored('i0:rank1', h(1, 2)), load('i0:rank0'), load('i0:rank1')]) state.apply(r);
    state.apply(stored('i0:rank0', h(9, 10), undefined, true));
    expect(pick(h(1, 2, 3))?.matchedBlocks).toBe(2);
    expect(pick(h(9, 10))).toMatchObject({ matchedBlocks: 2, dpRank: 0 });
    expect(state.apply({ ...stored('i0:rank1', h(5)), seq: 0 })).toBe('out_of_order');
    expect(state.apply({ ...load('i0:rank1'), seq: 0 })).toBe('out_of_order');
  });

  it('suspends a worker without fresh load, evicts one silent for stale_timeout_s', () => {
    const { state, clock, pick } = world();
    for (const r of [stored('i0:rank0', h(1, 2, 3)), load('i0:rank0')]) state.apply(r);
    expect(pick(h(1, 2, 3))).toBeDefined();
    clock.t += 4;
    expect(pick(h(1, 2, 3))).toBeUndefined();
    state.apply(load('i0:rank0'));
    expect(pick(h(1, 2, 3))).toBeDefined();
    clock.t += 11;
    expect(state.evictStale('ctx', 10)).toEqual(['i0']);
    state.apply(load('i0:rank0'));
    expect(pick(h(1, 2, 3))?.matchedBlocks).toBe(0);
  });

  it('adp: leaves out ranks over the fair share, ignores matches under the threshold; none: no rank', () => {
    const { state, pick } = world();
    for (const r of [stored('i0:rank0', h(1, 2, 3, 4)), load('i0:rank0', 0, 10_000), stored('i0:rank1', h(1)), load('i0:rank1', 0, 100), load('i0:rank2', 0, 100)]) state.apply(r);
    // rank0 holds all 4 blocks but carries far more than twice the mean load: rank1 or 2 wins.
    expect(pick(h(1, 2, 3, 4), { rankRoutingAlgo: 'adp' })?.dpRank).not.toBe(0);
    state.apply(load('i0:rank0', 0, 100));
    expect(pick(h(1, 2, 3, 4), { rankRoutingAlgo: 'adp' })?.dpRank).toBe(0);
    // A best match of 1 block in 40 is under match_rate_threshold: load alone decides (ties take turns).
    const long = h(1, ...Array.from({ length: 39 }, (_, i) => 100 + i));
    const ranks = new Set([0, 1, 2, 3, 4, 5].map(() => pick(long, { rankRoutingAlgo: 'adp' })?.dpRank));
    expect(ranks).toEqual(new Set([0, 1, 2]));
    expect(pick(h(1, 2, 3, 4), { rankRoutingAlgo: 'none' })).toEqual({ workerId: 'i0', matchedBlocks: 4, dpRank: undefined });
  });

  it('takes the pools\' namespaces only, and at most MAX_REPORTING_WORKERS workers each', () => {
    const { state } = world();
    expect(state.apply({ ...load('x:rank0'), namespace: 'tenant-a' })).toBe('unknown_namespace');
    for (let i = 0; i < MAX_REPORTING_WORKERS; i++) expect(state.apply(load(`w${i}`))).toBe('applied');
    expect(state.apply(load('one-more:rank0'))).toBe('too_many_workers');
    expect(state.apply(load('w7'))).toBe('applied');
    state.evictStale('ctx', -1);
    expect(state.apply(load('one-more:rank0'))).toBe('applied');
  });

  it('only picks workers the caller may use', () => {
    const { state } = world();
    for (const r of [stored('i0:rank0', h(1, 2)), load('i0:rank0'), load('i1:rank0')]) state.apply(r);
    expect(selectWorker(state, 'ctx', h(1, 2), params(), (id) => id !== 'i0')?.workerId).toBe('i1');
    expect(selectWorker(state, 'gen', h(1, 2), params(), () => true)).toBeUndefined();
  });
});
