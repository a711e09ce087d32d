import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing';
import { ClusterController } from './cluster.controller';

/** The router-level endpoints of trtllm-serve disaggregated: /health, /version, /cluster_info, /v1/models. */
@Module({
  imports: [RoutingModule],
  controllers: [ClusterController],
})
export class ClusterApiModule {}
