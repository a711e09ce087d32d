import type { RequestKind } from '../common';

/** The two request shapes whose prompts are tokenized: `/v1/completions` and `/v1/chat/completions`. */
export type PromptKind = RequestKind;

/** What prompt tokenization reads of a request, and the ids or the reason it leaves on it. */
export interface PromptRequest {
  readonly kind: PromptKind;
  readonly body: Readonly<Record<string, unknown>>;
  /** Prompt token ids, once known (given by the client or tokenized). */
  tokenIds?: number[];
  /** Why the prompt's text could not be tokenized with the model's tokenizer. */
  untokenized?: string;
}
