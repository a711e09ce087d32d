import { applyDecorators, Controller, UseGuards, UseInterceptors } from '@nestjs/common';
import { ApiBearerAuth, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { AdminAuditInterceptor } from './admin-audit.interceptor';
import { AdminTokenGuard } from './admin-token.guard';
import { ErrorDto } from './admin-dtos';

export const ADMIN_BEARER = 'admin-token';

/**
 * Every admin REST controller: served under `admin/v1/<resource>`, bearer token required,
 * mutations audited, documented under `tag` as such.
 */
export function AdminController(resource: string, tag: string = resource): ClassDecorator {
  return applyDecorators(
    Controller(`admin/v1/${resource}`),
    ApiTags(tag),
    UseGuards(AdminTokenGuard),
    UseInterceptors(AdminAuditInterceptor),
    ApiBearerAuth(ADMIN_BEARER),
    ApiUnauthorizedResponse({ type: ErrorDto, description: 'missing or wrong bearer token' }),
  );
}
