import {
  AxiosError,
  AxiosHeaders,
  type AxiosAdapter,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import type { Dispatcher } from 'undici';
import type { Readable } from 'node:stream';
import { AnswerTooLargeError, readBoundedBody } from './bounded-body';

/**
 * An axios adapter that sends requests through the session's undici dispatcher, so axios
 * keeps its API while requests share the session's keep-alive pool (axios' own http adapter
 * costs several times more CPU per request). `responseType: 'stream'` yields the body as a
 * Readable without buffering; other bodies are read within `maxContentLength` (axios' option).
 */
export function createUndiciAdapter(getDispatcher: () => Dispatcher): AxiosAdapter {
  return async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const dispatcher = getDispatcher();
    const url = new URL(config.url ?? '/', config.baseURL);
    if (config.params) {
      for (const [k, v] of Object.entries(config.params as Record<string, unknown>)) {
        url.searchParams.set(k, String(v));
      }
    }
    const headers = flattenHeaders(config.headers);
    const signal = combineSignals(config.signal as AbortSignal | undefined, config.timeout);
    let res: Dispatcher.ResponseData;
    try {
      res = await dispatcher.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: (config.method ?? 'get').toUpperCase() as Dispatcher.HttpMethod,
        headers,
        body: config.data as string | Buffer | undefined,
        signal,
      });
    } catch (err) {
      throw toAxiosError(err as Error, config);
    }
    const response: AxiosResponse = {
      status: res.statusCode,
      statusText: '',
      headers: AxiosHeaders.from(res.headers as Record<string, string>),
      config,
      request: null,
      data: undefined,
    };
    if (config.responseType === 'stream') {
      response.data = res.body as Readable;
    } else {
      try {
        const limit = config.maxContentLength !== undefined && config.maxContentLength >= 0 ? config.maxContentLength : Infinity;
        const bytes = await readBoundedBody(res.body, res.headers['content-length'], limit);
        response.data = config.responseType === 'arraybuffer' ? bytes : bytes.toString('utf8');
      } catch (err) {
        if (err instanceof AnswerTooLargeError) {
          // axios' own wording and code for the same limit.
          throw new AxiosError(`maxContentLength size of ${err.limitBytes} exceeded`, AxiosError.ERR_BAD_RESPONSE, config, null);
        }
        throw toAxiosError(err as Error, config);
      }
    }
    const validate = config.validateStatus;
    if (!validate || validate(res.statusCode)) return response;
    if (config.responseType === 'stream') (res.body as Readable).resume();
    throw new AxiosError(
      `Request failed with status code ${res.statusCode}`,
      res.statusCode >= 500 ? AxiosError.ERR_BAD_RESPONSE : AxiosError.ERR_BAD_REQUEST,
      config,
      null,
      response,
    );
  };
}

function flattenHeaders(headers: InternalAxiosRequestConfig['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers.toJSON(true) as Record<string, unknown>)) {
    if (v !== undefined && v !== null && v !== false) out[k.toLowerCase()] = String(v);
  }
  return out;
}

function combineSignals(signal: AbortSignal | undefined, timeoutMs: number | undefined): AbortSignal | undefined {
  if (!timeoutMs) return signal;
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

function toAxiosError(err: Error, config: InternalAxiosRequestConfig): AxiosError {
  if (err instanceof AxiosError) return err;
  const code =
    err.name === 'TimeoutError' ? AxiosError.ETIMEDOUT : err.name === 'AbortError' ? AxiosError.ERR_CANCELED : (err as NodeJS.ErrnoException).code;
  const wrapped = new AxiosError(err.message, code, config);
  wrapped.cause = err;
  return wrapped;
}
