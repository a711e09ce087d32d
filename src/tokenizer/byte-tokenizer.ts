import { renderQwen3Chat } from './chatml-template';
import { ChatMessage, TextTokenizer } from './text-tokenizer';

/**
 * Byte-level fallback: token ids are the UTF-8 bytes of the text (0..255). Chat messages are
 * rendered with the same ChatML layout as the default model, then taken as bytes. Cheap,
 * dependency-free and deterministic, at the cost of ~4x more tokens than a real tokenizer.
 */
export class ByteTokenizer implements TextTokenizer {
  readonly name = 'bytes';
  private readonly decoder = new TextDecoder('utf-8');

  encode(text: string): number[] {
    return Array.from(Buffer.from(text, 'utf8'));
  }

  decode(ids: number[]): string {
    return this.decoder.decode(Uint8Array.from(ids, (id) => id & 0xff));
  }

  renderChat(messages: ChatMessage[]): string {
    return renderQwen3Chat(messages, true);
  }

  encodeChat(messages: ChatMessage[]): number[] {
    return this.encode(this.renderChat(messages));
  }
}
