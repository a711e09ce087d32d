export * from './errors';
export * from './constants';
