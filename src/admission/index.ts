export * from './admission.module';
export * from './admission.service';
export * from './client-traffic-gate';
export * from './client-traffic.decorator';
export * from './slot-queue';
export * from './token-bucket';
