import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { DisaggService } from './disagg.service';
import { RequestEvents } from './request-events';
import { StreamRelay } from './stream-relay';
import { UpstreamDispatch } from './upstream-dispatch';

@Module({
  imports: [RoutingModule],
  providers: [DisaggService, UpstreamDispatch, StreamRelay, RequestEvents],
  exports: [DisaggService, RequestEvents, RoutingModule],
})
export class DisaggModule {}
