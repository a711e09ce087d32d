import { applyDecorators, UseGuards, UseInterceptors } from '@nestjs/common';
import { ApiBearerAuth, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { AdminAuditInterceptor } from './admin-audit.interceptor';
import { AdminTokenGuard } from './admin-token.guard';
import { ErrorDto } from './admin-dtos';

export const ADMIN_BEARER = 'admin-token';

/** Every admin controller: bearer token required, mutations audited, documented as such. */
export function AdminEndpoint(): ClassDecorator {
  return applyDecorators(
    UseGuards(AdminTokenGuard),
    UseInterceptors(AdminAuditInterceptor),
    ApiBearerAuth(ADMIN_BEARER),
    ApiUnauthorizedResponse({ type: ErrorDto, description: 'missing or wrong bearer token' }),
  );
}
