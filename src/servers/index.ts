export * from './cluster-status.service';
export * from './kv-block-table';
export * from './server-registry.service';
export * from './server-state';
export * from './server-state.factory';
export * from './servers.module';
