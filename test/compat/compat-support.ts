import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, type RunningCli } from '../../src/cli/run';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { serializeKvEvents } from '../../src/kv-cache/kv-events';
import { contextHandler, type FakeHandler, FakeWorker } from '../support/fake-worker';
import { waitFor } from '../support/router-app';
import { tempDir } from '../support/temp-dirs';

// Jest runs from the checkout root.
const CONFIGS = join(process.cwd(), 'test', 'compat', 'configs');

/**
 * Our copy of one of TensorRT-LLM's configs, with the `{{name}}` placeholders replaced by the
 * test's worker addresses (`host:port`, as TensorRT-LLM's files write them).
 */
export function writeConfig(name: string, values: Record<string, string | number>): string {
  let text = readFileSync(join(CONFIGS, name), 'utf8');
  for (const [key, value] of Object.entries(values)) text = text.replaceAll(`{{${key}}}`, String(value));
  const dir = tempDir('disagg-compat-');
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

export function hostPort(worker: FakeWorker): string {
  return `127.0.0.1:${worker.port}`;
}

/**
 * Starts the router through its command line, as `trtllm-serve disaggregated` would be
 * started, and waits until /health answers 200.
 */
export async function startThroughCli(args: string[]): Promise<RunningCli & { startTimeouts: string[] }> {
  const startTimeouts: string[] = [];
  const running = await runCli(args, {}, { onStartTimeout: (reason) => startTimeouts.push(reason) });
  await waitFor(async () => (await fetch(`${running.url}/health`)).status === 200, 15_000, 'router /health 200');
  return { ...running, startTimeouts };
}

/** TensorRT-LLM's flags, as its docs start the disaggregated server. */
export const TRTLLM_FLAGS = ['-t', '60', '-r', '120', '-l', 'error'];

/**
 * A worker that caches what it served, as a TensorRT-LLM worker with block reuse: every prompt
 * (token ids) it was sent is reported as stored blocks on its next /kv_cache_events.
 */
export async function startCachingWorker(handler: FakeHandler, tokensPerBlock: number): Promise<FakeWorker> {
  const worker = new FakeWorker(handler);
  let reported = 0;
  let eventId = 0;
  worker.kvEvents = () => {
    const fresh = worker.received.filter((r) => r.path.startsWith('/v1/')).slice(reported);
    reported += fresh.length;
    const events = fresh.map((r) => {
      const prompt = (r.body?.prompt ?? []) as number[];
      const blocks = blockHashChain(prompt, tokensPerBlock).map((hash) => ({ type: 'stored_block', block_hash: hash, tokens: [], lora_id: null, cache_level: 0, priority: 35 }));
      return { event_id: ++eventId, data: { type: 'stored', parent_hash: null, blocks } };
    });
    return serializeKvEvents(events);
  };
  return worker.start();
}

export function tokenIds(length: number, base: number): number[] {
  return Array.from({ length }, (_, i) => base + i);
}

export function completionsTo(worker: FakeWorker): Array<Record<string, unknown>> {
  return worker.received.filter((r) => r.path === '/v1/completions' || r.path === '/v1/chat/completions').map((r) => r.body ?? {});
}

/** A context worker that answers like TensorRT-LLM's: the prompt's token ids come back as prompt_token_ids. */
export function echoingContextHandler(): FakeHandler {
  return (req, res, worker) => {
    const prompt = req.body?.prompt;
    const ids = Array.isArray(prompt) && prompt.every((t) => typeof t === 'number') ? (prompt as number[]) : [1, 2, 3, 4, 5];
    return contextHandler({ promptTokenIds: ids })(req, res, worker);
  };
}
