import { Injectable } from '@nestjs/common';
import { RequestEvents } from '../../request-events';

export interface RequestStatsSnapshot {
  /** Epoch ms of the snapshot: rates are deltas between two of them. */
  at: number;
  requests_total: number;
  errors_total: number;
  kv_matched_tokens_total: number;
  kv_prompt_tokens_total: number;
}

/** Running totals behind the status page's request-rate and prefix-hit sparklines. */
@Injectable()
export class RequestStats {
  private requests = 0;
  private errors = 0;
  private matchedTokens = 0;
  private promptTokens = 0;

  constructor(events: RequestEvents) {
    events.on('requestDone', (done) => {
      this.requests++;
      if (done.status >= 500) this.errors++;
    });
    events.on('routed', (routed) => {
      if (!routed.promptTokens) return;
      this.promptTokens += routed.promptTokens;
      this.matchedTokens += routed.matchedTokens ?? 0;
    });
  }

  snapshot(): RequestStatsSnapshot {
    return {
      at: Date.now(),
      requests_total: this.requests,
      errors_total: this.errors,
      kv_matched_tokens_total: this.matchedTokens,
      kv_prompt_tokens_total: this.promptTokens,
    };
  }
}
