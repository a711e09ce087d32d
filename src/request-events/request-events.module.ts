import { Global, Module } from '@nestjs/common';
import { RequestEvents } from './request-events';

/** The one request-event bus: global, so observers need no import of the request flow's module. */
@Global()
@Module({
  providers: [RequestEvents],
  exports: [RequestEvents],
})
export class RequestEventsModule {}
