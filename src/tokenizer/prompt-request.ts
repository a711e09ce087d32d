import type { RequestKind } from '../common';
import type { TokenIds } from '../common/token-id-array';

/** The two request shapes whose prompts are tokenized: `/v1/completions` and `/v1/chat/completions`. */
export type PromptKind = RequestKind;

/** What prompt tokenization reads of a request. */
export interface PromptRequest {
  readonly kind: PromptKind;
  readonly body: Readonly<Record<string, unknown>>;
  /** Prompt token ids already known (an earlier tokenization): used as they are. */
  readonly tokenIds?: TokenIds;
}
