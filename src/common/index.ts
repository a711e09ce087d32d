export * from './errors';
export * from './constants';
export * from './request-chat-template';
