export * from './incremental-encoder';
export * from './piece-cache';
export * from './piece-cutter';
export * from './piece-cutters';
