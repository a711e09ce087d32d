export * from './http-api-error';
export * from './client-gone.error';
export * from './upstream-failure-kind';
