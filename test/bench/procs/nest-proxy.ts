import 'reflect-metadata';
import { Body, Controller, Inject, Module, Post, Res, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { argOf, failChild, serveChild } from '../lib/proc-child';
import { createTransport, type Transport } from '../lib/transports';
import { responseSink, twoHop, type Upstreams } from '../lib/two-hop';

/**
 * The smallest Nest app doing the two-hop job, on Fastify or on Express: the platform's own
 * cost, with the same undici transport as the bare proxy.
 */
const TRANSPORT = Symbol('TRANSPORT');
const UPSTREAMS = Symbol('UPSTREAMS');

/** What both platforms' replies have in common for a raw answer. */
interface RawReply {
  raw?: ServerResponse;
  hijack?: () => void;
}

@Controller('v1')
class ProxyController {
  constructor(
    @Inject(TRANSPORT) private readonly transport: Transport,
    @Inject(UPSTREAMS) private readonly up: Upstreams,
  ) {}

  @Post('completions')
  async completions(@Body() body: Record<string, unknown>, @Res() reply: RawReply): Promise<void> {
    reply.hijack?.();
    // Fastify: reply.raw; Express: the reply is the node response.
    const res = reply.raw ?? (reply as unknown as ServerResponse);
    await twoHop(this.transport, this.up, body, responseSink(res));
  }
}

async function main(): Promise<void> {
  const platform = argOf('platform', 'fastify');
  const transport = createTransport('undici-pool');
  @Module({
    controllers: [ProxyController],
    providers: [
      { provide: TRANSPORT, useValue: transport },
      { provide: UPSTREAMS, useValue: { ctx: argOf('ctx'), gen: argOf('gen') } },
    ],
  })
  class ProxyModule {}
  let app: INestApplication;
  if (platform === 'express') {
    const { ExpressAdapter } = await import('@nestjs/platform-express');
    app = await NestFactory.create(ProxyModule, new ExpressAdapter(), { logger: ['error'] });
  } else {
    const { FastifyAdapter } = await import('@nestjs/platform-fastify');
    app = await NestFactory.create(ProxyModule, new FastifyAdapter(), { logger: ['error'] });
  }
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  serveChild([port], async () => {
    await app.close();
    await transport.close();
  });
}

main().catch(failChild);
