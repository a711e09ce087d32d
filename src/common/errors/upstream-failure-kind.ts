/**
 * Why a call to a worker failed. `status_5xx`: a 5xx answer that is evidence against the server;
 * `status_500`: a 500 answer no other server contradicted (the request itself may be what failed,
 * so not counted against the server).
 */
export type UpstreamFailureKind = 'connect' | 'timeout' | 'reset' | 'status_5xx' | 'status_500' | 'bad_response' | 'aborted';
