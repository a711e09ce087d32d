import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { AdminController } from '../admin-controller.decorator';
import { RequestStats, type RequestStatsSnapshot } from './request-stats.service';
import { STATUS_PAGE_HTML } from './status-page.html';
import { STATUS_PAGE_SCRIPT } from './status-page.script';

// The page and its script hold no data: they ask for the token and read the admin API with it.
const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
};

/** The read-only status page at /admin/status. */
@ApiExcludeController()
@Controller('admin/status')
export class StatusPageController {
  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', PAGE_HEADERS['cache-control'])
  @Header('content-security-policy', PAGE_HEADERS['content-security-policy'])
  @Header('x-content-type-options', PAGE_HEADERS['x-content-type-options'])
  page(): string {
    return STATUS_PAGE_HTML;
  }

  @Get('app.js')
  @Header('content-type', 'text/javascript; charset=utf-8')
  @Header('cache-control', PAGE_HEADERS['cache-control'])
  @Header('x-content-type-options', PAGE_HEADERS['x-content-type-options'])
  script(): string {
    return STATUS_PAGE_SCRIPT;
  }
}

@AdminController('stats', 'status')
export class StatsAdminController {
  constructor(private readonly stats: RequestStats) {}

  @Get()
  @ApiOperation({ summary: 'Running request and prefix-hit totals (the status page derives rates from two reads)' })
  @ApiOkResponse({ description: '{at, requests_total, errors_total, kv_matched_tokens_total, kv_prompt_tokens_total}' })
  get(): RequestStatsSnapshot {
    return this.stats.snapshot();
  }
}
