export * from './config-error';
export * from './config.loader';
export * from './config.module';
export * from './config.schema';
export * from './config.tokens';
export * from './server-role';
export * from './trtllm-semantics';
export * from './cluster-storage-scope';
