import { ClusterWorkerRegistration } from '../../../src/discovery/cluster/cluster-worker-registration';
import { workerRecord } from '../../../src/discovery/cluster/cluster-keys';
import { waitFor } from '../../support/router-app';
import { BASE_CONFIG, post, runAttacks, summary, type Attack, type Build } from './attack-harness';
import { startPlainWorker, type PlainWorker } from './scripted-workers';

/**
 * Router RSS and /health latency under attacks on the disagg_cluster storage it serves on its
 * client port: 150 anonymous 20 MB `/set` calls then a `/get_prefix`; an anonymous overwrite of a
 * registered generation worker's key with a worker the attacker runs (the share of 20 prompts
 * that reach it). The after build runs as the README recommends (disagg_cluster.api_key, the
 * workers registering with it); the before build has no key to set. The /set calls go to a
 * storage served without a key, as the README allows on loopback: its size bounds are measured.
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/hostile/storage-attacks.js [--attacks=...]
 */
const KEY = 'storage-key-of-the-bench';
const CLUSTER_NAME = 'bench';
const PREFIX = `/trtllm-disagg/${CLUSTER_NAME}/workers`;

interface StorageWorkers {
  ctx: PlainWorker;
  gen: PlainWorker;
  attacker: PlainWorker;
}

/** The storage on loopback: served without a key (allowed there), or with `api_key` in the after build. */
const cluster = (build: Build, withKey: boolean): Record<string, unknown> => ({
  ...BASE_CONFIG,
  // The router's default body limit: the /set bodies are the attack.
  limits: {},
  disagg_cluster: {
    cluster_uri: 'http://127.0.0.1:8000', cluster_name: CLUSTER_NAME, heartbeat_interval_sec: 0.5, inactive_timeout_sec: 5,
    minimal_instances: { context_servers: 0, generation_servers: 0 },
    ...(build === 'after' && withKey ? { api_key: KEY } : {}),
  },
});

const ATTACKS: Attack<StorageWorkers>[] = [
  {
    name: '150 anonymous 20 MB /set, then /get_prefix',
    config: (_w, build) => cluster(build, false),
    ready: 'answering',
    run: async ({ url, signal }) => {
      const value = 'v'.repeat(20 * 1024 * 1024);
      const sets: string[] = [];
      for (let i = 0; i < 150 && !signal.aborted; i++) {
        const status = await fetch(`${url}/set`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"key":"${PREFIX}/junk-${i}","value":"${value}"}`, signal })
          .then(async (res) => (await res.arrayBuffer(), String(res.status)))
          // Refused from its head, the body's upload is cut: the client sees the connection end.
          .catch(() => (signal.aborted ? 'no answer' : 'cut'));
        sets.push(status);
      }
      const listing = await fetch(`${url}/get_prefix?key_prefix=${encodeURIComponent(PREFIX)}`, { signal })
        .then(async (res) => `get_prefix ${res.status} (${(await res.arrayBuffer()).byteLength} bytes)`)
        .catch((err: Error) => (signal.aborted ? 'get_prefix: no answer' : `get_prefix failed: ${err.message}`));
      return [...summary(sets.map((s) => `set ${s}`)), listing];
    },
  },
  {
    name: 'anonymous overwrite of a worker key (prompt hijack)',
    config: (_w, build) => cluster(build, true),
    ready: 'answering',
    run: async ({ url, signal, workers, build }) => {
      const opts = { clusterUri: url, clusterName: CLUSTER_NAME, host: '127.0.0.1', heartbeatIntervalS: 0.5, inactiveTimeoutS: 5, ...(build === 'after' ? { apiKey: KEY } : {}), log: () => undefined };
      const regs = [
        await ClusterWorkerRegistration.start({ ...opts, port: workers.ctx.port, role: 'context' }),
        await ClusterWorkerRegistration.start({ ...opts, port: workers.gen.port, role: 'generation' }),
      ];
      try {
        const chat = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'secret' }] };
        await waitFor(async () => signal.aborted || (await post(`${url}/v1/chat/completions`, chat, signal)) === '200', 30_000, 'the registered workers serving');
        const hijack = workerRecord(regs[1].workerId, '127.0.0.1', workers.attacker.port, 'generation');
        const overwrite = await post(`${url}/set`, { key: regs[1].key, value: hijack, overwrite_if_exists: true }, signal);
        // The router takes a storage change at once; the real heartbeats keep the key alive as it now is.
        await new Promise((r) => setTimeout(r, 1_000));
        const before = workers.attacker.served();
        const answers: string[] = [];
        for (let i = 0; i < 20 && !signal.aborted; i++) answers.push(await post(`${url}/v1/chat/completions`, { ...chat, messages: [{ role: 'user', content: `secret ${i}` }] }, signal));
        return [`overwrite ${overwrite}`, ...summary(answers), `${workers.attacker.served() - before}/20 prompts reached the attacker`];
      } finally {
        for (const r of regs) await r.close();
      }
    },
  },
];

async function main(): Promise<void> {
  const workers = { ctx: await startPlainWorker(), gen: await startPlainWorker(), attacker: await startPlainWorker() };
  await runAttacks(ATTACKS, workers);
  for (const w of Object.values(workers)) w.server.close();
}

void main();
