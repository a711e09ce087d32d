import { Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { AdminService } from './admin.service';
import { AdminController } from './admin-controller.decorator';

@AdminController('cluster')
export class ClusterAdminController {
  constructor(private readonly admin: AdminService) {}

  @Get()
  @ApiOperation({ summary: 'Router replicas, which worker each polls, bus state and lag (see README, Running several replicas)' })
  @ApiOkResponse({ description: '`enabled: false` without a `cluster` config section', schema: { type: 'object', additionalProperties: true } })
  get(): Record<string, unknown> {
    return this.admin.clusterView();
  }
}
