import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { AdminModule } from './admin/admin.module';
import { AdmissionModule } from './admission/admission.module';
import { AnthropicModule } from './anthropic';
import { ClusterApiModule } from './cluster-api';
import { AppConfigModule, type AppConfig } from './config';
import { DisaggModule } from './disagg/disagg.module';
import { DisaggClusterModule } from './discovery/cluster/disagg-cluster.module';
import { ServerDiscoveryModule } from './discovery/server-discovery.module';
import { HttpSessionModule } from './http-session';
import { HealthModule } from './health';
import { LifecycleModule } from './lifecycle/lifecycle.module';
import { ObservabilityModule } from './observability/observability.module';
import { OpenAiModule } from './openai/openai.module';
import { ReplicasModule } from './replicas';
import { ResponsesModule } from './responses/responses.module';
import { RoutingModule } from './routing';
import { RequestEventsModule } from './request-events';
import { ServersModule } from './servers';

export interface AppModuleOptions {
  config: AppConfig;
  /** Extra modules, e.g. ones providing custom routing policies. */
  imports?: ModuleMetadata['imports'];
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot({ config: options.config }),
        HttpSessionModule.forRoot(),
        RequestEventsModule,
        // Early: its Fastify hooks (request id, log context) must see every request.
        ObservabilityModule.forRoot(options.config),
        // Near the root: Nest destroys it (the drain) before the session and the routers.
        LifecycleModule,
        AdmissionModule,
        ServersModule,
        RoutingModule,
        DisaggModule,
        OpenAiModule,
        ResponsesModule,
        AnthropicModule,
        ClusterApiModule,
        HealthModule,
        ServerDiscoveryModule,
        DisaggClusterModule.forRoot(options.config),
        ReplicasModule.forRoot(options.config),
        AdminModule.forRoot(options.config),
        ...(options.imports ?? []),
      ],
    };
  }
}
