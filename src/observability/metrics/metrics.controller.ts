import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { MetricsService } from './metrics.service';
import { TrtllmMetrics } from './trtllm-metrics.service';

/**
 * Prometheus scrape endpoints: `/metrics` has this router's families; `/prometheus/metrics`
 * (where trtllm-serve serves them) has TensorRT-LLM's names first, then the same families.
 */
@Controller()
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly trtllm: TrtllmMetrics,
  ) {}

  @Get('metrics')
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    this.send(reply, await this.metrics.metrics());
  }

  @Get('prometheus/metrics')
  async scrapeTrtllm(@Res() reply: FastifyReply): Promise<void> {
    const [trtllm, own] = await Promise.all([this.trtllm.metrics(), this.metrics.metrics()]);
    this.send(reply, `${trtllm}\n${own}`);
  }

  private send(reply: FastifyReply, text: string): void {
    void reply.code(200).header('content-type', this.metrics.contentType).send(text);
  }
}
