import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { LoggerService } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createRouterApp } from '../../src/app.factory';
import { buildConfig } from '../../src/config';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { admin, TOKEN } from './admin-support';

interface Line {
  level: string;
  context: string;
  message: string;
}

/** Keeps every line the app logs, with its Nest context. */
class CapturingLogger implements LoggerService {
  readonly lines: Line[] = [];
  log(message: unknown, ...rest: unknown[]): void {
    this.push('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.push('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.push('warn', message, rest);
  }
  private push(level: string, message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : '';
    this.lines.push({ level, context, message: String(message) });
  }
}

describe('admin audit log', () => {
  let gen: FakeWorker;
  let app: NestFastifyApplication;
  let url: string;
  const logger = new CapturingLogger();
  const fingerprint = createHash('sha256').update(TOKEN).digest('hex').slice(0, 8);
  const audit = (): Line[] => logger.lines.filter((l) => l.context === 'AdminAudit');

  beforeAll(async () => {
    gen = await new FakeWorker(generationHandler()).start();
    app = await createRouterApp(buildConfig({ generation_servers: { urls: [gen.url] }, admin: { token: TOKEN } }), { logger });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await gen?.close();
  });
  beforeEach(() => {
    logger.lines.length = 0;
  });

  it('logs each successful change once, with the client address, token fingerprint and what changed', async () => {
    const res = await admin(url, 'POST', 'servers', { url: 'http://127.0.0.1:9', role: 'context' });
    expect(res.status).toBe(201);
    expect(audit()).toEqual([
      expect.objectContaining({ level: 'log', message: expect.stringMatching(new RegExp(`^127\\.0\\.0\\.1 token:${fingerprint}: POST /admin/v1/servers .*127\\.0\\.0\\.1:9.*context`)) }),
    ]);
    await admin(url, 'DELETE', `servers/${res.body.id as string}`);
    expect(audit()).toHaveLength(2);
    expect(audit()[1].message).toContain(`DELETE /admin/v1/servers/${res.body.id as string}`);
  });

  it('does not audit reads, and never writes the token', async () => {
    await admin(url, 'GET', 'servers');
    await admin(url, 'GET', 'config');
    expect(audit()).toEqual([]);
    expect(logger.lines.some((l) => l.message.includes(TOKEN))).toBe(false);
  });

  it('logs a refused call once, as a warning, without auditing it', async () => {
    const res = await admin(url, 'POST', 'servers', { url: 'http://127.0.0.1:9', role: 'context' }, 'Bearer not-the-token-at-all');
    expect(res.status).toBe(401);
    expect(audit()).toEqual([]);
    const refusals = logger.lines.filter((l) => l.message.includes('401'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0].level).toBe('warn');
    expect(logger.lines.some((l) => l.message.includes('not-the-token-at-all'))).toBe(false);
  });
});
