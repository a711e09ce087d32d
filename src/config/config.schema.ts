import { z } from 'zod';

/**
 * Schema of the router's YAML config: the keys of TensorRT-LLM's `trtllm-serve disaggregated`
 * config file, plus this router's own sections. Keys TensorRT-LLM workers use and the router
 * does not (tensor_parallel_size, backend, ...) are accepted and ignored, so existing files
 * work unchanged; this router's own sections are strict so typos are caught.
 */

const positiveInt = z.number().int().positive();
const nonNegative = z.number().nonnegative();

/** `http_session.body_encoding`: see README "Worker body encoding". */
export const BODY_ENCODING_SETTINGS = ['auto', 'json', 'msgpack'] as const;
export type BodyEncodingSetting = (typeof BODY_ENCODING_SETTINGS)[number];

/** `type` picks a routing policy by name; every other key is an argument for that policy. */
export const routerBlockSchema = z.looseObject({
  type: z.string().min(1).default('round_robin'),
});

const serverPoolSchema = z.looseObject({
  num_instances: z.number().int().nonnegative().optional(),
  urls: z.array(z.string().min(1)).optional(),
  router: routerBlockSchema.optional(),
  max_batch_size: positiveInt.optional(),
  max_num_tokens: positiveInt.optional(),
  kv_cache_config: z.looseObject({ tokens_per_block: positiveInt.optional() }).optional(),
});

const metadataServerSchema = z.looseObject({
  server_type: z.literal('etcd').default('etcd'),
  hostname: z.string().default('localhost'),
  port: z.number().int().min(1).max(65535).default(2379),
  health_check_timeout: z.number().positive().default(5),
  refresh_interval: z.number().positive().default(10),
  key_prefix: z.string().default('trtllm/'),
  /** Delete the key of a server found unreachable (as trtllm-serve does); it registers again when it restarts. */
  remove_dead_keys: z.boolean().default(true),
});

/**
 * TensorRT-LLM's self-registering workers: they put their key into a cluster storage and
 * heartbeat it. `http(s)://` serves that storage from this router; `etcd://host:port` keeps
 * it in etcd. Unknown keys are refused, as TensorRT-LLM does.
 */
const disaggClusterSchema = z.strictObject({
  cluster_uri: z.string().regex(/^(https?|etcd):\/\/[^/]+/i, 'must start with http://, https:// or etcd:// and name a host'),
  cluster_name: z.string().default(''),
  minimal_instances: z
    .strictObject({
      context_servers: z.number().int().nonnegative().default(1),
      generation_servers: z.number().int().nonnegative().default(1),
    })
    .default(() => ({ context_servers: 1, generation_servers: 1 })),
  heartbeat_interval_sec: z.number().positive().default(5),
  inactive_timeout_sec: z.number().positive().default(10),
  /**
   * Bearer token the served storage requires (403 otherwise), as TensorRT-LLM's storage server
   * takes one. DISAGG_CLUSTER_API_KEY overrides. Without it the storage is loopback-only.
   */
  api_key: z.string().min(1, 'is empty: give a key, or remove it').optional(),
  /** Serve the storage without a key on a non-loopback address (a trusted network only). */
  allow_unauthenticated: z.boolean().optional(),
  /** A listener of its own for the storage (then not served on the client port). */
  storage_listener: z
    .strictObject({ host: z.string().min(1).default('127.0.0.1'), port: z.number().int().min(0).max(65535) })
    .optional(),
});

const httpSessionSchema = z.strictObject({
  /** Keep-alive connections per upstream server. */
  connections_per_server: positiveInt.default(128),
  connect_timeout_ms: positiveInt.default(5_000),
  keep_alive_timeout_ms: positiveInt.default(30_000),
  /**
   * How inference bodies go to the workers (README "Worker body encoding"): `json` (every
   * TensorRT-LLM version), `msgpack` (X-TRTLLM-Msgpack, the newest workers), or `auto`
   * (msgpack, each worker that cannot parse it gets JSON from then on).
   */
  body_encoding: z.enum(BODY_ENCODING_SETTINGS).default('json'),
});

const timeoutsSchema = z.strictObject({
  /** Deadline of a whole client request, streams included (seconds); TensorRT-LLM's default is 180 s. */
  request_s: z.number().positive().default(180),
  /** Context phase: time to the context server's answer. */
  context_first_byte_s: z.number().positive().optional(),
  /** Generation phase, streams: time to the first event (TTFT). A non-streamed answer has only request_s. */
  generation_first_byte_s: z.number().positive().optional(),
  /** Longest silence between two chunks of a streamed answer. */
  stream_idle_s: z.number().positive().optional(),
  /** A client must send its request head within this (408 otherwise). */
  client_headers_s: z.number().positive().default(10),
  /** ... and its whole request, body included, within this. */
  client_body_s: z.number().positive().default(60),
});

const limitsSchema = z.strictObject({
  max_body_bytes: positiveInt.default(32 * 1024 * 1024),
  /** Largest non-streamed worker answer read (bytes); unset: sized from the request, at most 64 MiB. */
  max_answer_bytes: positiveInt.optional(),
  /** Largest answer of a control call to a worker (/server_info, /perf_metrics, ...); larger ones fail. */
  max_control_answer_bytes: positiveInt.default(8 * 1024 * 1024),
  /** Largest /kv_cache_events drain read; a larger one fails and the worker's KV view is rebuilt. */
  max_kv_events_bytes: positiveInt.default(64 * 1024 * 1024),
  /** Open client connections; more are refused. */
  max_connections: positiveInt.default(10_000),
  /** In-flight client requests over both pools; 0 = unlimited. */
  max_in_flight: z.number().int().nonnegative().default(0),
  /** Requests that may wait for a slot once max_in_flight is reached. */
  queue_size: z.number().int().nonnegative().default(0),
  queue_timeout_ms: z.number().int().nonnegative().default(10_000),
  /** Concurrent upstream calls per pool (a request holds a slot for its phase only); 0 = unlimited. */
  max_in_flight_per_pool: z
    .strictObject({
      context: z.number().int().nonnegative().default(0),
      generation: z.number().int().nonnegative().default(0),
    })
    .default(() => ({ context: 0, generation: 0 })),
  /** Client API keys (bearer tokens) with a token-bucket rate limit each; none = off. */
  api_keys: z
    .array(
      z.strictObject({
        key: z.string().min(1),
        requests_per_second: z.number().positive(),
        /** Requests allowed in a burst; defaults to one second's worth. */
        burst: positiveInt.optional(),
      }),
    )
    .default([]),
  /** With api_keys configured: refuse requests without a listed key (401) instead of letting them through unlimited. */
  reject_unknown_keys: z.boolean().default(false),
});

const healthSchema = z.strictObject({
  interval_s: z.number().positive().default(5),
  timeout_s: z.number().positive().default(3),
  /** Consecutive failed checks that take a server out of rotation. */
  failure_threshold: positiveInt.default(2),
  /** How long startup waits for the configured servers to be ready (0: do not wait). */
  startup_wait_s: nonNegative.default(30),
  /** A refused connection on a real request takes the server out of rotation at once. */
  eject_on_connect_failure: z.boolean().default(true),
  /** Consecutive failed requests (5xx, reset, timeout) open a server's breaker for a cool-down. */
  circuit_breaker: z
    .strictObject({
      enabled: z.boolean().default(true),
      failure_threshold: positiveInt.default(5),
      cooldown_s: z.number().positive().default(10),
    })
    .default(() => ({ enabled: true, failure_threshold: 5, cooldown_s: 10 })),
});

const adminSchema = z.strictObject({
  /** Bearer token; without one the admin API is disabled. DISAGG_ADMIN_TOKEN overrides. */
  token: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Serve admin on its own port instead of the main one. */
  port: z.number().int().min(0).max(65535).optional(),
  host: z.string().default('127.0.0.1'),
  /** When set, servers added through the API must be on one of these hosts. */
  allowed_hosts: z.array(z.string()).optional(),
  /** File where runtime changes are persisted (atomic write) and reloaded at start. */
  persist_file: z.string().optional(),
});

const loggingSchema = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  pretty: z.boolean().default(false),
  /** Prompts and completions are never logged unless this is on. */
  log_payloads: z.boolean().default(false),
});

const metricsSchema = z.strictObject({
  enabled: z.boolean().default(true),
});

const perfMetricsSchema = z.strictObject({
  /** Keep the last N requests' per-phase timings for GET /perf_metrics; 0 = off. */
  max_requests: z.number().int().nonnegative().default(0),
  /** perf_metrics_output_dir: a JSONL file is closed and a new one started past this size. */
  output_file_max_mb: z.number().positive().default(64),
  /** perf_metrics_output_dir: this process's newest files kept; older ones are deleted. */
  output_max_files: positiveInt.default(4),
});

const shutdownSchema = z.strictObject({
  drain_timeout_s: nonNegative.default(30),
});

const simulateSchema = z.looseObject({
  context: z.number().int().nonnegative().default(2),
  generation: z.number().int().nonnegative().default(2),
  /** Latency preset of the simulated workers: `demo` (realistic) or `zero`. */
  latency: z.enum(['demo', 'zero']).default('demo'),
  kv_blocks: positiveInt.optional(),
  tokens_per_block: positiveInt.optional(),
  /** Block-key algorithm the simulated workers announce and emit. */
  kv_hash_algo: z.enum(['v1_block_key', 'v2_sha256', 'v2_sha256_64']).optional(),
  /** Data-parallel ranks per simulated worker, each with its own KV cache. */
  dp_ranks: positiveInt.optional(),
  /** The workers push KV events and load to a centralized KV router on 127.0.0.1 at this port (its router_port). */
  kv_report_port: z.number().int().min(1).max(65535).optional(),
});

/**
 * Several router replicas sharing one KV view and load picture over NATS JetStream (see README,
 * Running several replicas). Absent: a single router, nothing new needed.
 */
const clusterSchema = z.strictObject({
  bus: z.string().regex(/^nats:\/\/[^/]+$/i, 'must be nats://host:port'),
  /** Unique per replica; default: host name and process id. */
  replica_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, - and _ only (at most 64)').optional(),
  /** Names the stream and buckets, so several router clusters can share one NATS. */
  name: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'letters, digits, - and _ only (at most 32)').default('disagg'),
  /** A worker's poll lease lives this long unless renewed (a third of it): the failover time. */
  lease_ttl_s: z.number().min(1).default(3),
  /** The owner polls each of its workers' /kv_cache_events this often. */
  poll_interval_ms: positiveInt.default(100),
  /** In-flight counts are published at most this often (when they changed; every second anyway). */
  load_interval_ms: positiveInt.default(50),
  /** The owner writes a worker's block-table snapshot this often (when it changed). */
  snapshot_interval_s: z.number().positive().default(5),
  /** Events older than this leave the stream; a snapshot covers them. */
  stream_max_age_s: z.number().positive().default(600),
});

export const routerConfigSchema = z.looseObject({
  hostname: z.string().default('localhost'),
  port: z.number().int().min(0).max(65535).default(8000),
  max_retries: z.number().int().nonnegative().default(1),
  context_servers: serverPoolSchema.optional(),
  generation_servers: serverPoolSchema.optional(),
  conditional_disagg_config: z
    .looseObject({ max_local_prefill_length: z.number().int().nonnegative().default(0) })
    .optional(),
  metadata_server_config: metadataServerSchema.optional(),
  disagg_cluster: disaggClusterSchema.optional(),
  /** TensorRT-LLM's switch for GET /perf_metrics in its format (worker metrics joined in); 0 = off. */
  perf_metrics_max_requests: z.number().int().nonnegative().default(0),
  /** TensorRT-LLM's per-response metrics: headers / SSE event for clients sending X-TRTLLM-return-metrics: 1. */
  return_perf_metrics: z.boolean().default(false),
  /** TensorRT-LLM's JSONL files of per-request metrics (perf_metrics-disagg-<host>-<pid>-<ts>.jsonl). */
  perf_metrics_output_dir: z.string().min(1).optional(),
  /** Goes into every disagg_request_id (bits 16-23), as TensorRT-LLM does; default from the host's MAC address. */
  node_id: z.number().int().min(0).max(255).optional(),
  /** context_first: context call, then generation call; generation_first: both sent together. */
  schedule_style: z.enum(['context_first', 'generation_first']).default('context_first'),
  /**
   * TensorRT-LLM's default-deny for a request's own `chat_template`: refused with 400 unless
   * true; when allowed, a router that tokenizes renders it in a bounded sandbox.
   */
  allow_request_chat_template: z.boolean().default(false),
  /** Write the request's conversation id into the worker bodies (`conversation_params`, `disaggregated_params.conversation_id`). */
  forward_conversation_id: z.boolean().default(true),
  /** TensorRT-LLM's tracing block: OTLP/HTTP traces go to this URL (see README, Tracing). */
  otlp_config: z.looseObject({ otlp_traces_endpoint: z.url().optional() }).optional(),
  http_session: httpSessionSchema.default(() => httpSessionSchema.parse({})),
  timeouts: timeoutsSchema.default(() => timeoutsSchema.parse({})),
  limits: limitsSchema.default(() => limitsSchema.parse({})),
  health: healthSchema.default(() => healthSchema.parse({})),
  admin: adminSchema.default(() => adminSchema.parse({})),
  logging: loggingSchema.default(() => loggingSchema.parse({})),
  metrics: metricsSchema.default(() => metricsSchema.parse({})),
  perf_metrics: perfMetricsSchema.default(() => perfMetricsSchema.parse({})),
  shutdown: shutdownSchema.default(() => shutdownSchema.parse({})),
  /** Embedded simulated cluster: its workers' URLs replace the url lists. */
  simulate: simulateSchema.optional(),
  cluster: clusterSchema.optional(),
});

export type AppConfigInput = z.input<typeof routerConfigSchema>;
export type AppConfig = z.output<typeof routerConfigSchema>;
export type ServerPoolConfig = z.output<typeof serverPoolSchema>;
export type RouterBlockConfig = z.output<typeof routerBlockSchema>;
export type DisaggClusterConfig = z.output<typeof disaggClusterSchema>;
export type ClusterConfig = z.output<typeof clusterSchema>;
