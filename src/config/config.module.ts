import { DynamicModule, Global, Module } from '@nestjs/common';
import { buildConfig, loadConfigFile } from './config.loader';
import type { AppConfig, AppConfigInput } from './config.schema';
import { APP_CONFIG } from './config.tokens';

export interface AppConfigModuleOptions {
  /** An already validated config, or a raw object to validate, or a YAML file to load. */
  config?: AppConfig | AppConfigInput;
  path?: string;
}

/** Validated router config as a global provider, loaded once (as @nestjs/config's forRoot). */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(options: AppConfigModuleOptions): DynamicModule {
    const config = options.config
      ? buildConfig(options.config)
      : loadConfigFile(options.path ?? 'config/default.yaml');
    return {
      module: AppConfigModule,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}
