import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config';
import { HttpSessionProvider } from './http-session.provider';
import { DEFAULT_HTTP_SESSION_OPTIONS, HTTP_SESSION_OPTIONS, type HttpSessionOptions } from './http-session.options';

/**
 * Provides the shared HttpSessionProvider. Consumers import this module, so Nest initialises
 * the session before them and destroys it after them.
 */
@Global()
@Module({})
export class HttpSessionModule {
  /** Options from the router config (`http_session`, `timeouts.request_s`). */
  static forRoot(): DynamicModule {
    return {
      module: HttpSessionModule,
      providers: [
        {
          provide: HTTP_SESSION_OPTIONS,
          inject: [APP_CONFIG],
          useFactory: (config: AppConfig): HttpSessionOptions => ({
            connectionsPerServer: config.http_session.connections_per_server,
            connectTimeoutMs: config.http_session.connect_timeout_ms,
            keepAliveTimeoutMs: config.http_session.keep_alive_timeout_ms,
            requestTimeoutMs: config.timeouts.request_s * 1000,
            maxControlAnswerBytes: config.limits.max_control_answer_bytes,
          }),
        },
        HttpSessionProvider,
      ],
      exports: [HttpSessionProvider],
    };
  }

  /** Explicit options, for apps and tests that do not use the router config. */
  static register(options: Partial<HttpSessionOptions> = {}): DynamicModule {
    return {
      module: HttpSessionModule,
      providers: [
        { provide: HTTP_SESSION_OPTIONS, useValue: { ...DEFAULT_HTTP_SESSION_OPTIONS, ...options } },
        HttpSessionProvider,
      ],
      exports: [HttpSessionProvider],
    };
  }
}
