import { Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { AdminService } from './admin.service';
import { EffectiveConfigDto } from './admin-dtos';
import { AdminController } from './admin-controller.decorator';

@AdminController('config')
export class ConfigAdminController {
  constructor(private readonly admin: AdminService) {}

  @Get()
  @ApiOperation({ summary: 'Effective config (secrets redacted) and the admin changes made since start' })
  @ApiOkResponse({ type: EffectiveConfigDto })
  get(): Record<string, unknown> {
    return this.admin.effectiveConfig();
  }
}
