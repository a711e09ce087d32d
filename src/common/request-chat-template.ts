import { HttpApiError } from './errors';

/**
 * TensorRT-LLM's default-deny for per-request chat templates (its
 * `ensure_request_chat_template_allowed`): a request carrying a `chat_template` is refused
 * unless the config sets `allow_request_chat_template: true`. Every front door that takes a
 * chat calls this before anything else reads the body (README "Coming from trtllm-serve").
 */
export function ensureRequestChatTemplateAllowed(body: Readonly<Record<string, unknown>>, allowed: boolean): void {
  if (allowed || body.chat_template === undefined || body.chat_template === null) return;
  throw new HttpApiError(
    400,
    'chat_template cannot be supplied per request unless request-level chat templates are enabled at server startup (allow_request_chat_template: true)',
    { param: 'chat_template', code: 'chat_template_not_allowed' },
  );
}
