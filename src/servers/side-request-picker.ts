import { Injectable } from '@nestjs/common';
import type { ServerRole } from '../config';
import { ServerRegistry } from './server-registry.service';
import type { ServerState } from './server-state';

/**
 * The worker for a side request: one that needs a worker's model and tokenizer but no KV
 * cache (token counting, the model list). As trtllm-serve disaggregated does, round robin over
 * the ready context servers when the cluster has a context pool, else over the ready
 * generation servers (aggregated). Side requests take no router reservation and no load.
 */
@Injectable()
export class SideRequestPicker {
  private next = 0;

  constructor(private readonly servers: ServerRegistry) {}

  /** The pool side requests go to. */
  role(): ServerRole {
    return this.servers.hasContextPool() ? 'context' : 'generation';
  }

  /** The next ready server of that pool, or undefined when none is ready. */
  pick(role = this.role()): ServerState | undefined {
    const ready = this.servers.ready(role);
    if (ready.length === 0) return undefined;
    const server = ready[this.next % ready.length];
    this.next = (this.next + 1) % 1_000_000;
    return server;
  }
}
