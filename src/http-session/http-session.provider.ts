import { HttpService } from '@nestjs/axios';
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import axios, { type AxiosInstance } from 'axios';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { ObjectSlot } from '../common/object-slot';
import { AbortHandle } from './abort-handle';
import { HttpSessionClosedError } from './http-session.errors';
import { HTTP_SESSION_OPTIONS, type HttpSessionOptions } from './http-session.options';
import { slicedBody, SLICED_BODY_CHARS, TextParts } from './sliced-body';
import { createUndiciAdapter } from './undici-axios-adapter';

type SessionState = 'new' | 'open' | 'closed';

/**
 * undici accepts an EventEmitter as a request's signal. Each upstream call then adds and
 * removes an emitter listener, cheaper than doing so on the AbortSignal (an EventTarget),
 * which gets a single listener however many upstream calls its client request makes.
 */
class AbortBridge extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;
}

/** On the signal itself, not in a WeakMap: a client request's signal and its bridge die young together (see ObjectSlot). */
const abortBridges = new ObjectSlot<AbortBridge>('abort bridge');

function abortBridgeOf(signal: AbortSignal): AbortBridge {
  let bridge = abortBridges.get(signal);
  if (bridge) return bridge;
  const created = new AbortBridge();
  created.setMaxListeners(0);
  if (signal.aborted) {
    created.aborted = true;
    created.reason = signal.reason;
  } else {
    signal.addEventListener('abort', () => {
      created.aborted = true;
      created.reason = signal.reason;
      created.emit('abort');
    }, { once: true });
  }
  abortBridges.set(signal, (bridge = created));
  return bridge;
}

export interface UpstreamRequest {
  origin: string;
  path: string;
  method?: Dispatcher.HttpMethod;
  headers?: Record<string, string>;
  /** A long text or TextParts go out in slices (see sliced-body.ts). */
  body?: string | Uint8Array | TextParts;
  /** An AbortHandle goes to undici as it is; an AbortSignal through a shared bridge. */
  signal?: AbortSignal | AbortHandle;
  /** Deadline for the response head (ms); defaults to the session's request timeout. */
  headersTimeoutMs?: number;
  /** Longest silence between two body chunks (ms); 0 disables. */
  bodyTimeoutMs?: number;
}

/**
 * The one shared keep-alive HTTP client of the app; nothing else opens connections to the
 * workers. Two faces on one pool: `axios` / `http` (@nestjs/axios) for the control calls,
 * which the WorkerClient makes, and `request()` for the inference hot path. Its lifetime
 * follows the Nest container: opened in onModuleInit, closed (sockets destroyed, in-flight
 * calls aborted) in onModuleDestroy. Consumers hold the provider and ask for the client at
 * the moment of use; outside that window every accessor throws HttpSessionClosedError.
 */
@Injectable()
export class HttpSessionProvider implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(HttpSessionProvider.name);
  private state: SessionState = 'new';
  private agent?: Agent;
  private axiosInstance?: AxiosInstance;
  private httpService?: HttpService;

  constructor(@Inject(HTTP_SESSION_OPTIONS) readonly options: HttpSessionOptions) {}

  onModuleInit(): void {
    if (this.state === 'open') return;
    this.agent = new Agent({
      connections: this.options.connectionsPerServer,
      keepAliveTimeout: this.options.keepAliveTimeoutMs,
      connect: { timeout: this.options.connectTimeoutMs },
      headersTimeout: this.options.requestTimeoutMs,
      bodyTimeout: 0,
    });
    this.axiosInstance = axios.create({
      adapter: createUndiciAdapter(() => this.dispatcher),
      maxRedirects: 0,
      timeout: this.options.requestTimeoutMs,
      // A worker's control answer is small: a hostile or broken one must not fill the memory.
      maxContentLength: this.options.maxControlAnswerBytes,
    });
    this.httpService = new HttpService(this.axiosInstance);
    this.state = 'open';
  }

  async onModuleDestroy(): Promise<void> {
    if (this.state !== 'open') {
      this.state = 'closed';
      return;
    }
    this.state = 'closed';
    const agent = this.agent;
    this.agent = undefined;
    this.axiosInstance = undefined;
    this.httpService = undefined;
    // destroy() (not close()) aborts in-flight requests and their sockets at once.
    await agent?.destroy();
    this.logger.debug('HTTP session closed');
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** The undici dispatcher of the session (the keep-alive pool). */
  get dispatcher(): Dispatcher {
    return this.assertOpen(this.agent);
  }

  /** The control-call face: the session's axios instance (undici transport). */
  get axios(): AxiosInstance {
    return this.assertOpen(this.axiosInstance);
  }

  /** The control-call face as @nestjs/axios' HttpService (Observable API). */
  get http(): HttpService {
    return this.assertOpen(this.httpService);
  }

  /**
   * The inference hot path: one upstream request straight on the pool, body left as a
   * stream. Cheaper than going through axios' config merging and transforms for every token
   * stream; control calls take the axios face. A long text body, or one in parts, goes out in
   * slices (see sliced-body.ts), its Content-Length computed up front.
   */
  request(req: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    const dispatcher = this.dispatcher;
    let { headers, body }: { headers?: Record<string, string>; body?: string | Uint8Array | TextParts | Readable } = req;
    if (body instanceof TextParts || (typeof body === 'string' && body.length >= SLICED_BODY_CHARS)) {
      const sliced = slicedBody(body);
      headers = { ...headers, 'content-length': String(sliced.byteLength) };
      body = sliced.slices;
    }
    return dispatcher.request({
      origin: req.origin,
      path: req.path,
      method: req.method ?? 'GET',
      headers,
      body,
      signal: req.signal instanceof AbortHandle ? req.signal : req.signal && abortBridgeOf(req.signal),
      headersTimeout: req.headersTimeoutMs ?? this.options.requestTimeoutMs,
      bodyTimeout: req.bodyTimeoutMs ?? 0,
    });
  }

  /** Open sockets per origin (connected + pending), for tests and admin state. */
  openSockets(): number {
    if (!this.agent) return 0;
    let total = 0;
    for (const stats of Object.values(this.agent.stats)) {
      // Pool stats count sockets; single-client stats say connected true/false.
      total += Number(stats.connected ?? 0);
    }
    return total;
  }

  private assertOpen<T>(value: T | undefined): T {
    if (this.state !== 'open' || value === undefined) {
      throw new HttpSessionClosedError(this.state === 'new' ? 'not yet opened' : 'closed');
    }
    return value;
  }
}
