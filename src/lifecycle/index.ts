export * from './drain.service';
export * from './graceful-shutdown';
export * from './lifecycle.module';
