import type * as http from 'node:http';
import type { FaultRule } from './faults';
import { errorBody } from './openai-response';
import { sendJson } from './sim-http';
import type { SimState } from './sim-state';

/** error / close / hang / invalid_json / html: answered here. Returns true when handled. */
export function answerTerminalFault(state: SimState, fault: FaultRule, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  switch (fault.kind) {
    case 'error': {
      const status = fault.status ?? 500;
      sendJson(res, status, errorBody('injected failure', status, 'InternalServerError'));
      return true;
    }
    case 'close':
      req.socket.destroy();
      return true;
    case 'hang':
      state.openScope(res);
      return true;
    case 'invalid_json':
      sendJson(res, 200, '{"id": "cmpl-garbage", "object": "text_completion", "choices": [{"text": ');
      return true;
    case 'html':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>');
      return true;
    default:
      return false;
  }
}
