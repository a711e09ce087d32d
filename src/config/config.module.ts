import { DynamicModule, Global, Module } from '@nestjs/common';
import { buildConfig, loadConfigFile } from './config.loader';
import type { RouterConfig, RouterConfigInput } from './config.schema';
import { ROUTER_CONFIG } from './config.tokens';

export interface RouterConfigModuleOptions {
  /** An already validated config, or a raw object to validate, or a YAML file to load. */
  config?: RouterConfig | RouterConfigInput;
  path?: string;
}

/** Validated router config as a global provider, loaded once (as @nestjs/config's forRoot). */
@Global()
@Module({})
export class RouterConfigModule {
  static forRoot(options: RouterConfigModuleOptions): DynamicModule {
    const config = options.config
      ? buildConfig(options.config)
      : loadConfigFile(options.path ?? 'config/default.yaml');
    return {
      module: RouterConfigModule,
      providers: [{ provide: ROUTER_CONFIG, useValue: config }],
      exports: [ROUTER_CONFIG],
    };
  }
}
