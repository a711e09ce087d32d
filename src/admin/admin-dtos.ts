import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { SERVER_ROLES } from '../config';

/** Shapes of the admin API for its OpenAPI document; validation is done by the zod schemas. */

const STATES = ['preparing', 'ready', 'draining', 'unhealthy'];

export class AddServerDto {
  @ApiProperty({ example: 'http://10.0.0.5:8001', description: 'http(s) origin, or host:port' })
  url!: string;

  @ApiProperty({ enum: SERVER_ROLES })
  role!: string;
}

export class HealthResultDto {
  @ApiProperty() ok!: boolean;
  @ApiProperty({ description: 'epoch ms' }) at!: number;
  @ApiProperty() latencyMs!: number;
  @ApiPropertyOptional() status?: number;
  @ApiPropertyOptional() error?: string;
}

export class ServerDto {
  @ApiProperty({ example: 'generation-10.0.0.5-8001' }) id!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ enum: SERVER_ROLES }) role!: string;
  @ApiProperty({ enum: ['config', 'etcd', 'admin', 'cluster'] }) source!: string;
  @ApiProperty({ enum: STATES }) state!: string;
  @ApiProperty() active_requests!: number;
  @ApiProperty() active_tokens!: number;
  @ApiProperty() kv_blocks_known!: number;
  @ApiProperty({ type: HealthResultDto, nullable: true }) last_health!: HealthResultDto | null;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'why the health module keeps it out of rotation' })
  ejection?: Record<string, unknown> | null;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'circuit breaker state' })
  circuit?: Record<string, unknown> | null;
}

export class ServerListDto {
  @ApiProperty({ type: [ServerDto] }) servers!: ServerDto[];
}

export class DrainResultDto {
  @ApiProperty({ type: ServerDto }) server!: ServerDto;
  @ApiProperty({ description: 'the server was idle and is already removed' }) removed!: boolean;
  @ApiProperty() remove_when_idle!: boolean;
}

export class DeletedServerDto {
  @ApiProperty() id!: string;
  @ApiProperty() deleted!: boolean;
}

export class RouterViewDto {
  @ApiProperty({ enum: SERVER_ROLES }) pool!: string;
  @ApiProperty() type!: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) args!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'policy state: per-server load, KV table sizes, ...' })
  state!: Record<string, unknown>;
}

export class RouterListDto {
  @ApiProperty({ type: [String] }) available_policies!: string[];
  @ApiProperty({ type: [RouterViewDto] }) routers!: RouterViewDto[];
}

export class EffectiveConfigDto {
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'the loaded config, secrets redacted' })
  config!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true }) admin_changes!: Record<string, unknown>;
  @ApiProperty({ type: String, nullable: true }) persist_file!: string | null;
}

class ErrorBodyDto {
  @ApiProperty() message!: string;
  @ApiProperty() type!: string;
  @ApiProperty({ type: String, nullable: true }) param!: string | null;
  @ApiProperty({ type: String, nullable: true }) code!: string | null;
}

export class ErrorDto {
  @ApiProperty({ type: ErrorBodyDto }) error!: ErrorBodyDto;
}
