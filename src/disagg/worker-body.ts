import { packBody } from './msgpack-body';
import { type JsonBodyText, serializeRequestText } from './serialize';

type Body = Record<string, unknown>;

/**
 * One worker request body, encoded when the server it goes to is known: a retry may go to a
 * server that takes the other encoding. Each encoding is made at most once. The JSON text has
 * its own maker, so a body that is cheaper to write as text (ids spliced in as the text they
 * came as) stays so for JSON workers; msgpack is always made from the object.
 */
export class WorkerBody {
  private text: JsonBodyText | undefined;
  private packed: Uint8Array | undefined;

  constructor(
    private readonly object: () => Body,
    private readonly makeText: () => JsonBodyText = () => serializeRequestText(object()),
  ) {}

  static of(body: Body): WorkerBody {
    return new WorkerBody(() => body);
  }

  /** The same body changed by `edit` (written from the object in both encodings). */
  map(edit: (body: Body) => Body): WorkerBody {
    return WorkerBody.of(edit(this.object()));
  }

  /** The JSON text, in parts when it holds a long string, as bytes when it holds a long id list (HttpApiError 400 when the client's body cannot be written). */
  get json(): JsonBodyText {
    return (this.text ??= this.makeText());
  }

  /** The msgpack bytes (HttpApiError 400 when the client's body cannot be written). */
  get msgpack(): Uint8Array {
    return (this.packed ??= packBody(this.object()));
  }
}
