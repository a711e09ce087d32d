type Body = Record<string, unknown>;

/**
 * A Responses stream's terminal event, as a worker frames it (`event: response.completed`) or
 * only writes it in the payload. JSON text cannot hold a raw newline or an unescaped quote, so
 * neither form can come from generated text.
 */
export const RESPONSES_STREAM_END = /(?:^|\n)event: ?response\.(?:completed|incomplete|failed)\r?\n|"type": ?"response\.(?:completed|incomplete|failed)"/;

/** The terminal event's type, chosen by the response's status as a worker chooses it. */
function terminalType(status: unknown): string {
  if (status === 'incomplete') return 'response.incomplete';
  if (status === 'failed') return 'response.failed';
  return 'response.completed';
}

/** Builds the events of one stream, numbered from 0. */
class EventWriter {
  private seq = 0;
  text = '';

  add(type: string, fields: Body): void {
    this.text += `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }
}

/**
 * The Responses event sequence of a whole answer (see docs/protocol.md "Responses"): created,
 * in_progress, each output item with its content parts and their text as one delta, then the
 * terminal event carrying the whole response. A streaming client of a request the context phase
 * already finished gets this instead of the generation worker's stream.
 */
export function replayResponseEvents(answer: Body): string {
  const output = Array.isArray(answer.output) ? (answer.output as unknown[]) : [];
  const w = new EventWriter();
  const opening = { ...answer, status: 'in_progress', output: [], usage: null, incomplete_details: null };
  w.add('response.created', { response: opening });
  w.add('response.in_progress', { response: opening });
  output.forEach((raw, outputIndex) => {
    if (typeof raw !== 'object' || raw === null) return;
    const item = raw as Body;
    const parts = Array.isArray(item.content) ? (item.content as unknown[]) : undefined;
    // Opened empty: the events after it fill it in, as a client rebuilding the response expects.
    const opened: Body = { ...item, status: 'in_progress' };
    if (parts) opened.content = [];
    if (typeof item.arguments === 'string') opened.arguments = '';
    w.add('response.output_item.added', { output_index: outputIndex, item: opened });
    const itemId = item.id;
    parts?.forEach((rawPart, contentIndex) => {
      if (typeof rawPart !== 'object' || rawPart === null) return;
      contentPartEvents(w, rawPart as Body, { item_id: itemId, output_index: outputIndex, content_index: contentIndex });
    });
    if (item.type === 'function_call' && typeof item.arguments === 'string') {
      const at = { item_id: itemId, output_index: outputIndex };
      w.add('response.function_call_arguments.delta', { ...at, delta: item.arguments });
      w.add('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.arguments });
    }
    w.add('response.output_item.done', { output_index: outputIndex, item });
  });
  w.add(terminalType(answer.status), { response: answer });
  return w.text;
}

/** A content part's added/delta/done events; its text goes out as one delta. */
function contentPartEvents(w: EventWriter, part: Body, at: Body): void {
  const type = part.type;
  const key = type === 'refusal' ? 'refusal' : 'text';
  const text = part[key];
  const known = type === 'output_text' || type === 'refusal' || type === 'reasoning_text';
  if (!known || typeof text !== 'string') return;
  w.add('response.content_part.added', { ...at, part: { ...part, [key]: '' } });
  const prefix = type === 'output_text' ? 'response.output_text' : type === 'refusal' ? 'response.refusal' : 'response.reasoning_text';
  w.add(`${prefix}.delta`, { ...at, delta: text, ...(type === 'output_text' ? { logprobs: [] } : {}) });
  w.add(`${prefix}.done`, { ...at, [key]: text, ...(type === 'output_text' ? { logprobs: [] } : {}) });
  w.add('response.content_part.done', { ...at, part });
}
