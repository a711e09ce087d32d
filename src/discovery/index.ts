export * from './etcd-client';
export * from './etcd-discovery.service';
export * from './etcd-server-entry';
export * from './server-discovery.module';
export * from './static-servers.service';
export * from './worker-registration';
