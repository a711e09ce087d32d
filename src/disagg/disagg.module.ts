import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { DisaggService } from './disagg.service';
import { StreamRelay } from './stream-relay';
import { UpstreamDispatch } from './upstream-dispatch';
import { WorkerBodyEncodings } from './worker-body-encodings';
import { WorkerCall } from './worker-call';

@Module({
  imports: [RoutingModule],
  providers: [DisaggService, UpstreamDispatch, StreamRelay, WorkerBodyEncodings, WorkerCall],
  exports: [DisaggService, RoutingModule],
})
export class DisaggModule {}
