import { Injectable } from '@nestjs/common';
import { KvWorkers } from '../kv-cache';
import { ServerSpec, ServerState } from './server-state';

/** Builds ServerStates and hands their block tables to the KV room for as long as they are known. */
@Injectable()
export class ServerStateFactory {
  constructor(private readonly kvWorkers: KvWorkers) {}

  create(spec: ServerSpec): ServerState {
    const server = new ServerState(spec);
    this.kvWorkers.attach(server);
    return server;
  }

  /** The server left the registry: its KV events go nowhere any more. */
  release(server: ServerState): void {
    this.kvWorkers.detach(server);
  }
}
