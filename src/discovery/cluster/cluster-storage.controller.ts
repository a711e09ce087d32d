import { Body, Controller, Delete, Get, Logger, Post, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { MemoryClusterStorage, STORAGE_LIMITS, type SetOutcome } from './memory-cluster-storage';

/**
 * The cluster storage endpoints self-registering workers call (`disagg_cluster` with an http(s)
 * uri), with TensorRT-LLM's shapes: every answer is `{"result": <result>}`, status 200 when the
 * result is truthy and 400 otherwise (a missing key, a refused set, an empty prefix). Malformed
 * parameters get 422 with a `detail` list, as FastAPI answers them. A key or value over
 * STORAGE_LIMITS gets 413, a set that would pass the storage's bounds 400 with a `detail`.
 */
@Controller()
export class ClusterStorageController {
  private readonly logger = new Logger('ClusterStorage');
  private fullLogged = false;

  constructor(private readonly storage: MemoryClusterStorage) {}

  @Post('set')
  set(@Body() body: unknown, @Res() reply: FastifyReply): void {
    const item = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    if (!item || typeof item.key !== 'string') return invalid(reply, ['body', 'key'], 'a string key is required');
    const value = item.value ?? '';
    if (typeof value !== 'string') return invalid(reply, ['body', 'value'], 'value must be a string');
    const ttl = item.ttl ?? -1;
    if (typeof ttl !== 'number' || !Number.isInteger(ttl)) return invalid(reply, ['body', 'ttl'], 'ttl must be an integer');
    const overwrite = item.overwrite_if_exists ?? false;
    if (typeof overwrite !== 'boolean') return invalid(reply, ['body', 'overwrite_if_exists'], 'overwrite_if_exists must be a boolean');
    if (Buffer.byteLength(item.key) > STORAGE_LIMITS.keyBytes) return tooLarge(reply, `the key exceeds ${STORAGE_LIMITS.keyBytes} bytes`);
    if (Buffer.byteLength(value) > STORAGE_LIMITS.valueBytes) return tooLarge(reply, `the value exceeds ${STORAGE_LIMITS.valueBytes} bytes`);
    this.answerSet(reply, this.storage.set(item.key, value, { overwrite, ttlS: ttl }));
  }

  private answerSet(reply: FastifyReply, outcome: SetOutcome): void {
    if (outcome !== 'full') {
      this.fullLogged = false;
      return answer(reply, outcome === 'set');
    }
    const detail = `the cluster storage is full (at most ${STORAGE_LIMITS.keys} keys, ${STORAGE_LIMITS.totalBytes} bytes)`;
    // Once until a set succeeds again: a full storage is a state, not an event per request.
    if (!this.fullLogged) this.logger.warn(detail);
    this.fullLogged = true;
    void reply.code(400).header('content-type', 'application/json').send(JSON.stringify({ result: false, detail }));
  }

  @Get('get')
  get(@Query('key') key: unknown, @Res() reply: FastifyReply): void {
    if (typeof key !== 'string') return invalid(reply, ['query', 'key'], 'Field required');
    answer(reply, this.storage.get(key) ?? null);
  }

  @Get('expire')
  expire(@Query('key') key: unknown, @Query('ttl') ttl: unknown, @Res() reply: FastifyReply): void {
    if (typeof key !== 'string') return invalid(reply, ['query', 'key'], 'Field required');
    const seconds = typeof ttl === 'string' && /^-?\d+$/.test(ttl) ? Number(ttl) : NaN;
    if (!Number.isSafeInteger(seconds)) return invalid(reply, ['query', 'ttl'], 'ttl must be an integer');
    answer(reply, this.storage.expire(key, seconds));
  }

  @Delete('delete')
  delete(@Query('key') key: unknown, @Res() reply: FastifyReply): void {
    if (typeof key !== 'string') return invalid(reply, ['query', 'key'], 'Field required');
    answer(reply, this.storage.delete(key));
  }

  @Get('get_prefix')
  getPrefix(@Query('key_prefix') prefix: unknown, @Query('keys_only') keysOnly: unknown, @Res() reply: FastifyReply): void {
    if (typeof prefix !== 'string') return invalid(reply, ['query', 'key_prefix'], 'Field required');
    const flag = keysOnly === undefined ? false : parseFlag(keysOnly);
    if (flag === undefined) return invalid(reply, ['query', 'keys_only'], 'keys_only must be a boolean');
    answer(reply, this.storage.getPrefix(prefix, flag));
  }
}

function answer(reply: FastifyReply, result: unknown): void {
  void reply.code(truthy(result) ? 200 : 400).header('content-type', 'application/json').send(JSON.stringify({ result }));
}

/** Python truthiness of the results these endpoints return. */
function truthy(result: unknown): boolean {
  if (typeof result === 'object' && result !== null) return Object.keys(result).length > 0;
  return Boolean(result);
}

function tooLarge(reply: FastifyReply, detail: string): void {
  void reply.code(413).header('content-type', 'application/json').send(JSON.stringify({ detail }));
}

function invalid(reply: FastifyReply, loc: string[], msg: string): void {
  void reply.code(422).header('content-type', 'application/json').send(JSON.stringify({ detail: [{ loc, msg, type: 'value_error' }] }));
}

/** FastAPI's bool query parsing. */
function parseFlag(value: unknown): boolean | undefined {
  const v = String(value).toLowerCase();
  if (['1', 'true', 'on', 'yes'].includes(v)) return true;
  if (['0', 'false', 'off', 'no'].includes(v)) return false;
  return undefined;
}
