export * from './cluster-status.service';
export * from './server-registry.service';
export * from './server-state';
export * from './server-state.factory';
export * from './servers.module';
export * from './side-request-picker';
