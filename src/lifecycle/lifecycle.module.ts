import { Module } from '@nestjs/common';
import { ServersModule } from '../servers';
import { DrainService } from './drain.service';

/**
 * Graceful shutdown. Import it from the root module only (not global, not imported by
 * feature modules): Nest destroys modules nearest the root first, so the drain runs before
 * the HTTP session and the routers it waits for are torn down.
 */
@Module({
  imports: [ServersModule],
  // No global interceptor: the OpenAI handlers count themselves in (see ClientTrafficGate), so
  // their routes run without Nest's per-request interceptor chain.
  providers: [DrainService],
  exports: [DrainService],
})
export class LifecycleModule {}
