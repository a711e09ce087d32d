export * from './cluster-admin-view';
export * from './replicas.module';
