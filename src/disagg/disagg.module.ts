import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { DisaggService } from './disagg.service';

@Module({
  imports: [RoutingModule],
  providers: [DisaggService],
  exports: [DisaggService, RoutingModule],
})
export class DisaggModule {}
