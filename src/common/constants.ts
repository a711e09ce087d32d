/** The OpenAI request kinds the router serves through the two-phase flow. */
export type RequestKind = 'completion' | 'chat' | 'responses';

/** Where each request kind is served, on the router and on the workers alike. */
export const INFERENCE_PATH: Readonly<Record<RequestKind, string>> = {
  completion: '/v1/completions',
  chat: '/v1/chat/completions',
  responses: '/v1/responses',
};

/** The inference paths, for guards and hooks that match on the URL. */
export const INFERENCE_PATHS: readonly string[] = Object.values(INFERENCE_PATH);

/** Correlates one request across client, router logs and both workers. */
export const REQUEST_ID_HEADER = 'x-request-id';
