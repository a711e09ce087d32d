import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { DisaggService } from './disagg.service';
import { StreamRelay } from './stream-relay';
import { UpstreamDispatch } from './upstream-dispatch';

@Module({
  imports: [RoutingModule],
  providers: [DisaggService, UpstreamDispatch, StreamRelay],
  exports: [DisaggService, RoutingModule],
})
export class DisaggModule {}
