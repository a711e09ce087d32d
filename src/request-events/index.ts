export * from './request-events';
export * from './request-events.module';
