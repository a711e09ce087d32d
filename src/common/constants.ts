/** The OpenAI inference endpoints the router serves, by request kind. */
export const INFERENCE_PATHS = { completion: '/v1/completions', chat: '/v1/chat/completions' } as const;

/** The request id a client may send and every answer carries. */
export const REQUEST_ID_HEADER = 'x-request-id';
