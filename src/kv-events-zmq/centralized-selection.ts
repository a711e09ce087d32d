import type { BlockKey } from '../kv-cache';
import type { CentralizedKvState, InstanceState, RankState } from './centralized-kv-state';

/** Phase-2 algorithms: `instance` scores ranks as instances are scored, `adp` as the workers' ADP router, `none` picks no rank. */
export const RANK_ROUTING_ALGOS = ['instance', 'adp', 'none'] as const;
export type RankRoutingAlgo = (typeof RANK_ROUTING_ALGOS)[number];

export interface SelectionParams {
  tokensPerBlock: number;
  loadWeight: number;
  rankRoutingAlgo: RankRoutingAlgo;
  fairShareMultiplier: number;
  matchRateThreshold: number;
  loadSuspendS: number;
}

export interface Selection {
  workerId: string;
  matchedBlocks: number;
  /** Set when a rank was chosen: the request's `route_hint.dp_rank`. */
  dpRank?: number;
}

interface Candidate {
  id: string;
  matched: number;
  inst?: InstanceState;
}

/**
 * TensorRT-LLM's two-phase select_worker (see docs/protocol.md "Centralized KV router"):
 * 1. among the workers of the namespace with a fresh load report (within load_suspend_s) and
 *    eligible here, the highest `matched_blocks - load_weight * (active + queued)` (an
 *    instance: its combined table, its ranks' summed load); ties round robin;
 * 2. within a chosen instance, a rank by `rank_routing_algo`.
 * Undefined when no worker qualifies.
 */
export function selectWorker(
  state: CentralizedKvState, namespace: string, hashes: readonly BlockKey[], params: SelectionParams, eligible: (workerId: string) => boolean,
): Selection | undefined {
  const ns = state.namespace(namespace);
  if (!ns) return undefined;
  const now = state.now();
  let best = -Infinity;
  let tied: Candidate[] = [];
  const consider = (c: Candidate, score: number): void => {
    if (score > best) {
      best = score;
      tied = [c];
    } else if (score === best) tied.push(c);
  };
  for (const [id, inst] of ns.instances) {
    if (now - inst.freshestLoadTs() > params.loadSuspendS || !eligible(id)) continue;
    const matched = hashes.length ? inst.combined.matchPrefix(hashes) : 0;
    consider({ id, matched, inst }, matched - params.loadWeight * inst.workload());
  }
  for (const [id, rs] of ns.whole) {
    if (!rs.load || now - rs.lastLoadTs > params.loadSuspendS || !eligible(id)) continue;
    const matched = hashes.length ? rs.table.matchPrefix(hashes) : 0;
    consider({ id, matched }, matched - params.loadWeight * rs.workload);
  }
  if (!tied.length) return undefined;
  const winner = tied[ns.rr++ % tied.length];
  if (!winner.inst) return { workerId: winner.id, matchedBlocks: winner.matched };
  return { workerId: winner.id, matchedBlocks: winner.matched, dpRank: selectRank(winner.inst, hashes, params, now) };
}

function selectRank(inst: InstanceState, hashes: readonly BlockKey[], params: SelectionParams, now: number): number | undefined {
  if (params.rankRoutingAlgo === 'none') return undefined;
  const adp = params.rankRoutingAlgo === 'adp';
  const tpb = params.tokensPerBlock;
  const candidates: RankCandidate[] = [];
  for (const [rank, rs] of inst.ranks) {
    if (now - rs.lastLoadTs > params.loadSuspendS) continue;
    const blocks = hashes.length ? rs.table.matchPrefix(hashes) : 0;
    candidates.push({ rank, matched: adp ? blocks * tpb : blocks, load: rankLoad(rs, adp, tpb) });
  }
  const best = adp
    ? scoreKvAwareCandidates(candidates, params, hashes.length * tpb)
    : argmax(candidates, (c) => c.matched - params.loadWeight * c.load);
  if (!best.length) return undefined;
  return best[inst.rr++ % best.length];
}

interface RankCandidate {
  rank: number;
  matched: number;
  load: number;
}

/** adp: active KV tokens when reported, else requests times the block size; instance: requests. */
function rankLoad(rs: RankState, adp: boolean, tpb: number): number {
  if (!rs.load) return 0;
  if (!adp) return rs.workload;
  return rs.load.numActiveTokens || rs.workload * tpb;
}

function argmax(candidates: readonly RankCandidate[], score: (c: RankCandidate) => number): number[] {
  let best = -Infinity;
  let out: number[] = [];
  for (const c of candidates) {
    const s = score(c);
    if (s > best) {
      best = s;
      out = [c.rank];
    } else if (s === best) out.push(c.rank);
  }
  return out;
}

/**
 * The workers' ADP scoring, in tokens: ranks loaded above fair_share_multiplier times the mean
 * load are left out (unless that leaves none); when no rank matches more than
 * match_rate_threshold of the request, matches count as zero; then the highest
 * `matched - load_weight * load / total_load * request_tokens` wins.
 */
function scoreKvAwareCandidates(candidates: readonly RankCandidate[], params: SelectionParams, totalUnits: number): number[] {
  if (!candidates.length) return [];
  const mean = candidates.reduce((n, c) => n + c.load, 0) / candidates.length;
  const cap = Math.max(1, params.fairShareMultiplier) * Math.max(mean, 1);
  const under = candidates.filter((c) => c.load <= cap);
  const eligible = under.length ? under : candidates;
  const maxMatch = Math.max(0, ...eligible.map((c) => c.matched));
  const cacheActive = maxMatch / Math.max(totalUnits, 1) > params.matchRateThreshold;
  const loadDenom = Math.max(eligible.reduce((n, c) => n + c.load, 0), 1);
  const scale = totalUnits > 0 ? totalUnits : 1;
  return argmax(eligible, (c) => (cacheActive ? c.matched : 0) - params.loadWeight * (c.load / loadDenom) * scale);
}
