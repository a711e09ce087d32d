import { z } from 'zod';
import { DEFAULT_TOKENIZER, isTokenizerName, TOKENIZER_NAMES } from '../../tokenizer';

/** Arguments shared by the policies that tokenize prompts. */
export const tokenizerArg = z
  .string()
  .default(DEFAULT_TOKENIZER)
  .refine(isTokenizerName, { message: `must be one of ${TOKENIZER_NAMES.join(', ')}` });

/** Worker threads for tokenizing text (0: on the event loop). Shared by all routers of the process. */
export const tokenizerThreadsArg = z.number().int().min(0).max(8).default(1);
