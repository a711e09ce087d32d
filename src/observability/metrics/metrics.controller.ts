import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { MetricsService } from './metrics.service';

/** Prometheus scrape endpoint; `/prometheus/metrics` is where trtllm-serve serves it. */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get(['metrics', 'prometheus/metrics'])
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const text = await this.metrics.metrics();
    void reply.code(200).header('content-type', this.metrics.contentType).send(text);
  }
}
