export * from './arriving-text';
export * from './worker-client';
export * from './worker-client.module';
export * from './worker-health';
export * from './server-info';
