import { Module } from '@nestjs/common';
import { ServersModule } from '../servers';
import { ClusterController } from './cluster.controller';

/** The router-level endpoints of trtllm-serve disaggregated: /health, /version, /cluster_info, /v1/models. */
@Module({
  imports: [ServersModule],
  controllers: [ClusterController],
})
export class ClusterApiModule {}
