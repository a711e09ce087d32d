export * from './abort-handle';
export * from './http-session.errors';
export * from './http-session.module';
export * from './http-session.options';
export * from './http-session.provider';
export * from './transport-errors';
export * from './bounded-body';
export { SLICED_BODY_CHARS, TextParts } from './sliced-body';
