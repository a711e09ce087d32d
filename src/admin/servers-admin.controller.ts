import { Body, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  } from '@nestjs/swagger';
import { AdminService } from './admin.service';
import { addServerSchema, flagSchema, type AddServerBody } from './admin-schemas';
import { AddServerDto, DeletedServerDto, DrainResultDto, ErrorDto, ServerDto, ServerListDto } from './admin-dtos';
import { AdminController } from './admin-controller.decorator';
import { ZodValidationPipe } from './zod-validation.pipe';

@AdminController('servers')
export class ServersAdminController {
  constructor(private readonly admin: AdminService) {}

  @Get()
  @ApiOperation({ summary: 'Servers of both pools with state, load, KV blocks known, last health check and source' })
  @ApiOkResponse({ type: ServerListDto })
  list(): { servers: unknown[] } {
    return { servers: this.admin.listServers().map((s) => s.toJSON()) };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One server' })
  @ApiOkResponse({ type: ServerDto })
  @ApiNotFoundResponse({ type: ErrorDto })
  get(@Param('id') id: string): unknown {
    return this.admin.server(id).toJSON();
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Add a server to a pool; it serves once prepared (server_info and health)' })
  @ApiCreatedResponse({ type: ServerDto })
  @ApiBadRequestResponse({ type: ErrorDto, description: 'bad URL or role' })
  @ApiForbiddenResponse({ type: ErrorDto, description: 'host not in admin.allowed_hosts' })
  @ApiConflictResponse({ type: ErrorDto, description: 'already registered' })
  @ApiBody({ type: AddServerDto })
  async add(@Body(new ZodValidationPipe(addServerSchema)) body: AddServerBody): Promise<unknown> {
    const server = await this.admin.addServer(body);
    return server.toJSON();
  }

  @Post(':id/drain')
  @HttpCode(200)
  @ApiOperation({ summary: 'Stop sending new requests to a server; in-flight ones finish there' })
  @ApiQuery({ name: 'remove', required: false, type: Boolean, description: 'remove the server once it is idle' })
  @ApiOkResponse({ type: DrainResultDto })
  @ApiNotFoundResponse({ type: ErrorDto })
  drain(@Param('id') id: string, @Query('remove', new ZodValidationPipe(flagSchema, 'remove')) remove: boolean): unknown {
    return this.admin.drain(id, remove);
  }

  @Post(':id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Undo a drain: the server is prepared again and serves once its health check passes' })
  @ApiOkResponse({ type: ServerDto })
  @ApiNotFoundResponse({ type: ErrorDto })
  @ApiConflictResponse({ type: ErrorDto, description: 'the server is not draining' })
  resume(@Param('id') id: string): unknown {
    return this.admin.resume(id).toJSON();
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Remove a server; refused while it has requests in flight unless force=true' })
  @ApiQuery({ name: 'force', required: false, type: Boolean })
  @ApiOkResponse({ type: DeletedServerDto })
  @ApiNotFoundResponse({ type: ErrorDto })
  @ApiConflictResponse({ type: ErrorDto, description: 'requests in flight' })
  async remove(@Param('id') id: string, @Query('force', new ZodValidationPipe(flagSchema, 'force')) force: boolean): Promise<DeletedServerDto> {
    const server = await this.admin.removeServer(id, force);
    return { id: server.id, deleted: true };
  }
}
