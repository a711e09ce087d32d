import { Module } from '@nestjs/common';
import { KvReportEndpoints } from './kv-report-endpoints.service';

/**
 * The event source of the centralized KV router: the ZMQ PULL endpoints workers push their KV
 * events and load to, beside the KV room's HTTP poller. Replicas and metrics plug in through
 * KV_REPORT_RELAY and KV_REPORT_METRICS, provided by global modules.
 */
@Module({
  providers: [KvReportEndpoints],
  exports: [KvReportEndpoints],
})
export class KvEventsZmqModule {}
