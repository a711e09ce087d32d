import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { ServersModule } from '../servers';
import { DrainInterceptor } from './drain.interceptor';
import { DrainService } from './drain.service';

/**
 * Graceful shutdown. Import it from the root module only (not global, not imported by
 * feature modules): Nest destroys modules nearest the root first, so the drain runs before
 * the HTTP session and the routers it waits for are torn down.
 */
@Module({
  imports: [ServersModule],
  providers: [DrainService, { provide: APP_INTERCEPTOR, useClass: DrainInterceptor }],
  exports: [DrainService],
})
export class LifecycleModule {}
