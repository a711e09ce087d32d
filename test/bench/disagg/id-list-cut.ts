import { cutIdList } from '../../../src/common/id-list-text';
import { runScript } from '../lib/run-script';

/**
 * What cutting a context answer's `prompt_token_ids` out of its text costs (the generation body
 * splices that text): the router's cut against the single-loop pattern it replaced, on a 9k-id
 * answer written compact (`1,2,3`, as TensorRT-LLM's encoders write it) and spaced (`1, 2, 3`).
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/disagg/id-list-cut.js [--rounds=5 --ids=9000]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const ROUNDS = Math.min(Number(args.get('rounds') ?? 5), 50);
const IDS = Math.min(Number(args.get('ids') ?? 9000), 200_000);
const CALLS = 1000;

/** The pattern before: one loop whose every turn tries the blanks around a comma. */
const SINGLE_LOOP = /\s*(\[\s*(?:\d+\s*,\s*)*\d+\s*\])/y;

function singleLoopCut(text: string, member: string): string | undefined {
  const key = `"${member}":`;
  const at = text.indexOf(key);
  if (at < 0) return undefined;
  SINGLE_LOOP.lastIndex = at + key.length;
  return SINGLE_LOOP.exec(text)?.[1];
}

/** Median microseconds per call. */
function timed(cut: () => unknown): number {
  const runs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < CALLS / 10; k++) cut();
    const t = process.hrtime.bigint();
    for (let k = 0; k < CALLS; k++) cut();
    runs.push(Number(process.hrtime.bigint() - t) / CALLS / 1000);
  }
  return runs.sort((a, b) => a - b)[Math.floor(runs.length / 2)];
}

async function main(): Promise<void> {
  const ids = Array.from({ length: IDS }, (_, i) => (i * 7919) % 151_000);
  const compact = JSON.stringify(ids);
  const layouts = { compact, spaced: compact.replace(/,/g, ', ') };
  const rows: string[] = [];
  for (const [name, list] of Object.entries(layouts)) {
    // Flat, as an answer decoded from its bytes is.
    const text = Buffer.from(`{"id":"cmpl-1","prompt_token_ids":${list},"choices":[]}`).toString('utf8');
    if (cutIdList(text, 'prompt_token_ids')?.ids !== list || singleLoopCut(text, 'prompt_token_ids') !== list) throw new Error(`the ${name} list was not cut whole`);
    const now = timed(() => cutIdList(text, 'prompt_token_ids'));
    const before = timed(() => singleLoopCut(text, 'prompt_token_ids'));
    rows.push(`| ${name} | ${list.length} | ${before.toFixed(1)} | ${now.toFixed(1)} | ${(now / before).toFixed(2)}x |`);
  }
  process.stdout.write(`${IDS} ids, median of ${ROUNDS} rounds of ${CALLS} calls\n\n| layout | chars | single loop us | cutIdList us | ratio |\n|---|---|---|---|---|\n${rows.join('\n')}\n`);
}

runScript(main);
