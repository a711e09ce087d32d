import { TextTokenizer } from '../tokenizer';

export type FinishReason = 'length' | 'stop';

export interface Generation {
  /** Output token ids, up to and including the one that completed a stop string. */
  tokenIds: number[];
  /** Text each token adds to `text` (clipped at a stop string; may be ''). */
  pieces: string[];
  text: string;
  finishReason: FinishReason;
}

const imul = Math.imul; // captured once: global lookups are slow inside vm contexts

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which ' +
  'but have an they you were her she there been one all we their has would when if so no what ' +
  'up out about into than them can only other new some time could these two may first then do ' +
  'any like my now over such our man me even most made after also did many before must through ' +
  'years where much your way well down should because each just those people how too little state ' +
  'good very make world still own see men work long get here between both life being under never ' +
  'day same another know while last might us great old year off come since against go came right ' +
  'used take three'
).split(' ');

/**
 * Deterministic stand-in for a model: output token i of a prompt is a fixed function of a
 * hash of the prompt's token ids and i, drawn from a vocabulary of whole-word tokens of the
 * worker's tokenizer. The same prompt always yields the same text, and a continuation that
 * starts from a given first token (generation_only) yields the aggregated text.
 */
export class TextGenerator {
  private vocabIds: number[] = [];
  private readonly pieceById = new Map<number, string>();

  constructor(private readonly tokenizer: TextTokenizer) {
    for (const w of WORDS) {
      const ids = tokenizer.encode(' ' + w);
      if (ids.length === 1 && !this.pieceById.has(ids[0])) this.addVocab(ids[0]);
    }
    if (this.vocabIds.length < 16) {
      // Byte-level tokenizers have no word tokens: use letters and the space.
      this.vocabIds = [];
      this.pieceById.clear();
      for (const ch of ' etaoinshrdlucmfwypvbgk ') {
        const ids = tokenizer.encode(ch);
        if (ids.length === 1 && !this.pieceById.has(ids[0])) this.addVocab(ids[0]);
      }
    }
  }

  /** Seed of a prompt: FNV-1a over its token ids. */
  static promptSeed(promptIds: ArrayLike<number>): number {
    let h = 0x811c9dc5;
    for (let i = 0; i < promptIds.length; i++) {
      h = imul(h ^ (promptIds[i] >>> 0), 0x01000193);
    }
    return h >>> 0;
  }

  tokenAt(seed: number, index: number): number {
    let h = (seed ^ imul(index + 1, 0x9e3779b1)) >>> 0;
    h = imul(h ^ (h >>> 16), 0x45d9f3b);
    h = imul(h ^ (h >>> 16), 0x45d9f3b);
    h = (h ^ (h >>> 16)) >>> 0;
    return this.vocabIds[h % this.vocabIds.length];
  }

  pieceOf(id: number): string {
    let p = this.pieceById.get(id);
    if (p === undefined) {
      p = this.tokenizer.decode([id]);
      this.pieceById.set(id, p);
    }
    return p;
  }

  /**
   * Generates up to `maxTokens` tokens; `firstTokens` (first_gen_tokens of a context phase)
   * are taken as the first outputs. Stops at the first occurrence of a stop string, which is
   * not part of the text (OpenAI semantics).
   */
  generate(promptIds: ArrayLike<number>, maxTokens: number, stop: readonly string[], firstTokens?: readonly number[]): Generation {
    const seed = TextGenerator.promptSeed(promptIds);
    const tokenIds: number[] = [];
    const pieces: string[] = [];
    let text = '';
    const maxStop = stop.length ? Math.max(...stop.map((s) => s.length)) : 0;
    for (let i = 0; i < maxTokens; i++) {
      const id = firstTokens && i < firstTokens.length ? firstTokens[i] : this.tokenAt(seed, i);
      const piece = this.pieceOf(id);
      tokenIds.push(id);
      if (maxStop > 0) {
        const from = Math.max(0, text.length - maxStop + 1);
        const joined = text + piece;
        let cut = -1;
        for (const s of stop) {
          if (!s) continue;
          const at = joined.indexOf(s, from);
          if (at >= 0 && (cut < 0 || at < cut)) cut = at;
        }
        if (cut >= 0) {
          pieces.push(cut > text.length ? joined.slice(text.length, cut) : '');
          // A stop string may begin inside text already produced: clip it from there.
          if (cut < text.length) clipTail(pieces, text.length - cut);
          text = joined.slice(0, cut);
          return { tokenIds, pieces, text, finishReason: 'stop' };
        }
        text = joined;
      } else {
        text += piece;
      }
      pieces.push(piece);
    }
    return { tokenIds, pieces, text, finishReason: 'length' };
  }

  private addVocab(id: number): void {
    this.vocabIds.push(id);
    this.pieceById.set(id, this.tokenizer.decode([id]));
  }
}

/** Removes `n` trailing characters from the pieces already emitted (before the last one). */
function clipTail(pieces: string[], n: number): void {
  for (let i = pieces.length - 2; i >= 0 && n > 0; i--) {
    const take = Math.min(n, pieces[i].length);
    pieces[i] = pieces[i].slice(0, pieces[i].length - take);
    n -= take;
  }
}
