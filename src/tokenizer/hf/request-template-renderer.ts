import type { ChatTemplateInput, ChatTemplates } from './chat-template';
import { RequestTemplateSandbox } from './request-template-sandbox';

/**
 * A request's own `chat_template` (allowed by `allow_request_chat_template`), rendered as the
 * model's templates are (same variables, same continue_final_message cut) but in the
 * bounded sandbox, off the event loop. Its thread starts on the first such request.
 */
export class RequestTemplateRenderer {
  private sandbox?: RequestTemplateSandbox;

  async render(templates: ChatTemplates, input: ChatTemplateInput): Promise<string> {
    const context = templates.renderContext(input);
    this.sandbox ??= new RequestTemplateSandbox();
    const rendered = await this.sandbox.render(input.chat_template!, context);
    return templates.finish(rendered, input);
  }

  async close(): Promise<void> {
    await this.sandbox?.close();
  }
}
