import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { normalizeServerUrl, type ServerRole } from '../config';
import { ServerSpec, ServerState, ServerStatus, serverIdFor } from './server-state';
import { ServerStateFactory } from './server-state.factory';

export type ServerEvent =
  | { type: 'added'; server: ServerState }
  | { type: 'status'; server: ServerState; previous: ServerStatus }
  | { type: 'removed'; server: ServerState };

/**
 * Every known worker of both pools, whatever its source (config, etcd, admin) and status.
 * Routers only see the `ready` ones: the RouterRegistry follows this registry's events.
 */
@Injectable()
export class ServerRegistry {
  private readonly logger = new Logger(ServerRegistry.name);
  private readonly servers = new Map<string, ServerState>();
  private readonly events = new EventEmitter();

  constructor(private readonly factory: ServerStateFactory) {
    this.events.setMaxListeners(0);
  }

  /** Adds a server in `preparing` state; returns the existing one for a known url and role. */
  add(spec: ServerSpec): ServerState {
    const url = normalizeServerUrl(spec.url);
    const id = serverIdFor(spec.role, url);
    const existing = this.servers.get(id);
    if (existing) return existing;
    const server = this.factory.create({ ...spec, url });
    this.servers.set(server.id, server);
    this.logger.log(`${spec.role} server ${url} added (source ${spec.source})`);
    this.emit({ type: 'added', server });
    return server;
  }

  setStatus(server: ServerState, status: ServerStatus): void {
    if (server.status === status || !this.servers.has(server.id)) return;
    const previous = server.status;
    server.status = status;
    this.logger.log(`${server.role} server ${server.url}: ${previous} -> ${status}`);
    this.emit({ type: 'status', server, previous });
  }

  remove(server: ServerState): void {
    if (!this.servers.delete(server.id)) return;
    this.factory.release(server);
    this.logger.log(`${server.role} server ${server.url} removed`);
    this.emit({ type: 'removed', server });
  }

  get(id: string): ServerState | undefined {
    return this.servers.get(id);
  }

  findByUrl(role: ServerRole, url: string): ServerState | undefined {
    return this.servers.get(serverIdFor(role, normalizeServerUrl(url)));
  }

  list(role?: ServerRole): ServerState[] {
    if (!role) return [...this.servers.values()];
    const out: ServerState[] = [];
    for (const s of this.servers.values()) if (s.role === role) out.push(s);
    return out;
  }

  ready(role: ServerRole): ServerState[] {
    const out: ServerState[] = [];
    for (const s of this.servers.values()) if (s.role === role && s.status === 'ready') out.push(s);
    return out;
  }

  /**
   * Whether requests take the disaggregated path: the config declared context servers, or a
   * discovered/added one has been admitted. A context server still being prepared does not
   * switch an aggregated cluster over (it would answer 503 until the server is ready).
   */
  hasContextPool(): boolean {
    // Asked on every request: a plain scan, no arrays.
    for (const s of this.servers.values()) {
      if (s.role === 'context' && (s.source === 'config' || s.status !== 'preparing')) return true;
    }
    return false;
  }

  onEvent(listener: (event: ServerEvent) => void): () => void {
    this.events.on('event', listener);
    return () => this.events.off('event', listener);
  }

  private emit(event: ServerEvent): void {
    this.events.emit('event', event);
  }
}
