import { Body, Get, Param, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiOkResponse, ApiOperation, ApiParam } from '@nestjs/swagger';
import { SERVER_ROLES, type ServerRole } from '../config';
import { AdminService, type RouterView } from './admin.service';
import { routerSwitchSchema, serverRoleSchema, type RouterSwitchBody } from './admin-schemas';
import { ErrorDto, RouterListDto, RouterViewDto } from './admin-dtos';
import { AdminController } from './admin-controller.decorator';
import { ZodValidationPipe } from './zod-validation.pipe';

const poolParam = new ZodValidationPipe(serverRoleSchema, 'pool');

@AdminController('routers')
export class RoutersAdminController {
  constructor(private readonly admin: AdminService) {}

  @Get()
  @ApiOperation({ summary: 'Routing policy, arguments and state of each pool' })
  @ApiOkResponse({ type: RouterListDto })
  list(): { available_policies: string[]; routers: RouterView[] } {
    return { available_policies: this.admin.availablePolicies(), routers: this.admin.routerViews() };
  }

  @Get(':pool')
  @ApiOperation({ summary: "One pool's router" })
  @ApiParam({ name: 'pool', enum: SERVER_ROLES })
  @ApiOkResponse({ type: RouterViewDto })
  get(@Param('pool', poolParam) pool: ServerRole): RouterView {
    return this.admin.routerView(pool);
  }

  @Put(':pool')
  @ApiOperation({ summary: "Switch a pool's routing policy at runtime; in-flight requests are not dropped" })
  @ApiParam({ name: 'pool', enum: SERVER_ROLES })
  @ApiBody({
    description: '`{type, ...args}`, as a pool router block in the config file',
    schema: {
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string', description: 'routing policy name' } },
      additionalProperties: true,
      example: { type: 'kv_cache_aware', use_tokens: false },
    },
  })
  @ApiOkResponse({ type: RouterViewDto })
  @ApiBadRequestResponse({ type: ErrorDto, description: 'unknown policy or invalid arguments' })
  switch(@Param('pool', poolParam) pool: ServerRole, @Body(new ZodValidationPipe(routerSwitchSchema)) body: RouterSwitchBody): Promise<RouterView> {
    return this.admin.switchRouter(pool, body);
  }
}
