import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { DisaggService } from './disagg.service';
import { RequestEvents } from './request-events';

@Module({
  imports: [RoutingModule],
  providers: [DisaggService, RequestEvents],
  exports: [DisaggService, RequestEvents, RoutingModule],
})
export class DisaggModule {}
