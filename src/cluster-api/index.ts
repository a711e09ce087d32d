export * from './cluster-api.module';
export * from './cluster.controller';
