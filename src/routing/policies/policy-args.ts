import { z } from 'zod';
import { isTokenizerName, loadModelTokenizer, TOKENIZER_NAMES } from '../../tokenizer';

/**
 * A built-in tokenizer for every model (the simulator's: its ids are only right for the
 * simulator). Unset, text is tokenized with the model's own tokenizer.
 */
export const tokenizerArg = z
  .string()
  .optional()
  .refine((v) => v === undefined || isTokenizerName(v), { message: `must be one of ${TOKENIZER_NAMES.join(', ')}` });

/** A Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json) that must load now. */
export const tokenizerDirArg = z
  .string()
  .min(1)
  .optional()
  .superRefine((dir, ctx) => {
    if (dir === undefined) return;
    try {
      loadModelTokenizer(dir);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `cannot load the tokenizer: ${(err as Error).message}` });
    }
  });

/** Worker threads for tokenizing text (0: on the event loop). Shared by all routers of the process. */
export const tokenizerThreadsArg = z.number().int().min(0).max(8).default(1);

/**
 * MB of tokenized prompt pieces kept (least recently used dropped), shared by all routers of
 * the process (the largest size asked for wins); 0 turns it off.
 */
export const tokenizerCacheMbArg = z.number().min(0).max(65536).default(64);

/** Longest prompt text tokenized (characters); longer ones are routed by load. Unset: from the model's maximum length. */
export const tokenizerMaxPromptCharsArg = z.number().int().positive().optional();

/** The tokenizer keys of every policy that tokenizes prompts. */
export const tokenizerArgs = {
  tokenizer: tokenizerArg,
  /** TensorRT-LLM's name for the model's tokenizer directory; `custom_tokenizer` is accepted as a path too. */
  tokenizer_dir: tokenizerDirArg,
  custom_tokenizer: tokenizerDirArg,
  tokenizer_threads: tokenizerThreadsArg,
  tokenizer_cache_mb: tokenizerCacheMbArg,
  tokenizer_max_prompt_chars: tokenizerMaxPromptCharsArg,
};
