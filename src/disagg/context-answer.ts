/**
 * The shape a context_only answer must have before its parameters go to a generation server,
 * as TensorRT-LLM checks it: exactly one choice, and the transfer parameters unless the
 * finish reason says the request is already finished. A missing finish reason is not
 * "finished": such an answer would otherwise be relayed as a complete (and empty) answer.
 */
export type ContextAnswerCheck =
  | { ok: true; choice: Record<string, unknown>; finished: boolean }
  | { ok: false; problem: string };

export function checkContextAnswer(json: Record<string, unknown>): ContextAnswerCheck {
  const choices = json.choices;
  if (!Array.isArray(choices)) return { ok: false, problem: 'a context answer without choices' };
  if (choices.length !== 1) return { ok: false, problem: `a context answer with ${choices.length} choices (expected 1)` };
  const choice = choices[0] as unknown;
  if (typeof choice !== 'object' || choice === null || Array.isArray(choice)) return { ok: false, problem: 'a context answer whose choice is not an object' };
  const c = choice as Record<string, unknown>;
  const finished = finishedByContext(c);
  if (!finished && (typeof c.disaggregated_params !== 'object' || c.disaggregated_params === null || Array.isArray(c.disaggregated_params))) {
    return { ok: false, problem: `a context answer without disaggregated_params (finish_reason ${JSON.stringify(c.finish_reason ?? null)})` };
  }
  return { ok: true, choice: c, finished };
}

/** Any finish reason but `length` and `not_finished` means nothing is left to generate. */
export function finishedByContext(choice: Record<string, unknown>): boolean {
  const reason = choice.finish_reason;
  return typeof reason === 'string' && reason !== 'length' && reason !== 'not_finished';
}
