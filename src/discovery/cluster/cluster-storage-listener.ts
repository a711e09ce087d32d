import { DynamicModule, Inject, Injectable, Logger, MiddlewareConsumer, Module, NestModule, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { clientErrorHandler, frameworkErrors } from '../../common/errors/framework-errors';
import { APP_CONFIG, type AppConfig } from '../../config';
import { ClusterStorageAccessMiddleware, MAX_SET_BODY_BYTES } from './cluster-storage-access.middleware';
import { ClusterStorageController } from './cluster-storage.controller';
import { MemoryClusterStorage } from './memory-cluster-storage';

/** Root of the storage's own listener: the storage endpoints over the main app's storage instance. */
@Module({})
class ClusterStorageListenerModule implements NestModule {
  static forInstances(config: AppConfig, storage: MemoryClusterStorage): DynamicModule {
    return {
      module: ClusterStorageListenerModule,
      controllers: [ClusterStorageController],
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: MemoryClusterStorage, useValue: storage },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ClusterStorageAccessMiddleware).forRoutes(ClusterStorageController);
  }
}

/**
 * `disagg_cluster.storage_listener`: serves the cluster storage on an address of its own (a
 * second, small Nest app over the same storage), so the client port need not carry it. It
 * starts once the main app is bootstrapped and closes with it.
 */
@Injectable()
export class ClusterStorageListener implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('ClusterStorage');
  private app?: NestFastifyApplication;
  private boundUrl?: string;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly storage: MemoryClusterStorage,
  ) {}

  /** `http://host:port` once listening. */
  get url(): string | undefined {
    return this.boundUrl;
  }

  async onApplicationBootstrap(): Promise<void> {
    const listener = this.config.disagg_cluster?.storage_listener;
    if (!listener) return;
    const app = await NestFactory.create<NestFastifyApplication>(
      ClusterStorageListenerModule.forInstances(this.config, this.storage),
      new FastifyAdapter({ bodyLimit: MAX_SET_BODY_BYTES, clientErrorHandler, frameworkErrors }),
      { abortOnError: false },
    );
    this.app = app;
    await app.listen(listener.port, listener.host);
    const address = app.getHttpServer().address();
    const port = typeof address === 'object' && address ? address.port : listener.port;
    this.boundUrl = `http://${listener.host.includes(':') ? `[${listener.host}]` : listener.host}:${port}`;
    this.logger.log(`cluster storage listening on ${this.boundUrl}`);
  }

  async onModuleDestroy(): Promise<void> {
    const app = this.app;
    this.app = undefined;
    await app?.close();
  }
}
