import { Injectable } from '@nestjs/common';
import { HttpSessionProvider } from '../http-session';
import { ServerSpec, ServerState } from './server-state';

/** Builds ServerStates, handing each the session provider (not a client). */
@Injectable()
export class ServerStateFactory {
  constructor(private readonly session: HttpSessionProvider) {}

  create(spec: ServerSpec): ServerState {
    return new ServerState(spec, this.session);
  }
}
