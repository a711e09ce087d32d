export * from './admin.module';
export * from './admin.service';
export * from './admin-docs';
export * from './admin-placement';
export * from './admin-port-host.service';
export * from './redact';
