import { DynamicModule, Inject, Injectable, Logger, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { clientErrorHandler, frameworkErrors } from '../common/errors/framework-errors';
import { APP_CONFIG, type AppConfig } from '../config';
import { OpenAiExceptionFilter } from '../common/errors/openai-exception.filter';
import { AdminApiModule } from './admin-api.module';
import { mountAdminDocs } from './admin-docs';
import { AdminService } from './admin.service';
import { RequestStats } from './status-page/request-stats.service';

/** Root of the separate admin app: the admin API over the main app's own instances. */
@Module({})
class AdminAppModule {
  static forInstances(config: AppConfig, admin: AdminService, stats: RequestStats): DynamicModule {
    return {
      module: AdminAppModule,
      imports: [
        AdminApiModule.register({
          providers: [
            { provide: APP_CONFIG, useValue: config },
            { provide: AdminService, useValue: admin },
            { provide: RequestStats, useValue: stats },
          ],
        }),
      ],
      providers: [{ provide: APP_FILTER, useClass: OpenAiExceptionFilter }],
    };
  }
}

const ADMIN_BODY_LIMIT = 1024 * 1024;

/**
 * Serves the admin API on `admin.host:admin.port` as a second, small Nest app that shares
 * the main app's AdminService (and through it the registry and routers). It starts once the
 * main app is bootstrapped and closes first on shutdown, so no admin change lands mid-drain.
 */
@Injectable()
export class AdminPortHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Admin');
  private app?: NestFastifyApplication;
  private boundUrl?: string;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly admin: AdminService,
    private readonly stats: RequestStats,
  ) {}

  /** `http://host:port` once listening. */
  get url(): string | undefined {
    return this.boundUrl;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { host, port = 0 } = this.config.admin;
    // No logger option: the admin app shares the main app's logger settings.
    const app = await NestFactory.create<NestFastifyApplication>(
      AdminAppModule.forInstances(this.config, this.admin, this.stats),
      new FastifyAdapter({ bodyLimit: ADMIN_BODY_LIMIT, routerOptions: { maxParamLength: 2_048 }, clientErrorHandler, frameworkErrors }),
      { abortOnError: false },
    );
    this.app = app;
    await mountAdminDocs(app);
    await app.listen(port, host);
    const address = app.getHttpServer().address();
    const boundPort = typeof address === 'object' && address ? address.port : port;
    this.boundUrl = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
    this.logger.log(`admin API listening on ${this.boundUrl}`);
  }

  async onModuleDestroy(): Promise<void> {
    const app = this.app;
    this.app = undefined;
    await app?.close();
  }
}
