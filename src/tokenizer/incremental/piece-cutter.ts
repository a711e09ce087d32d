import { textCutProblem, textCuts } from './text-cut-safety';

interface AddedTokenJson {
  content: string;
  special?: boolean;
  normalized?: boolean;
  lstrip?: boolean;
  single_word?: boolean;
}

interface TrieNode {
  next: Map<number, TrieNode>;
  /** Set when a token ends here: whether the text may be cut right before it. */
  token?: { length: number; cuttable: boolean };
}

/** Plain text shorter than this is never cut (pieces stay large enough to be worth a lookup). */
export const MIN_TEXT_PIECE = 1024;

/**
 * Cuts a prompt's text where the tokenizer itself cannot join tokens across the cut, so the
 * pieces encoded apart give the ids of the whole text:
 * - before every added token matched on the raw text (`normalized: false`, as chat templates'
 *   special tokens are), found exactly as the tokenizer finds them: leftmost, longest first.
 *   The tokenizer splits its input there before normalizing or pre-tokenizing, so a piece that
 *   starts with the token encodes as it does in place. Not before a token with `lstrip` (it
 *   would eat the previous piece's trailing spaces), and no cut at all when a raw-text token is
 *   `single_word` (whether it matches depends on its neighbours);
 * - inside plain text only where text-cut-safety proves it for this tokenizer.
 */
export class PieceCutter {
  private readonly root: TrieNode = { next: new Map() };
  /** Why plain text is not cut, when it is not. */
  readonly textProblem: string | undefined;
  readonly cutsAtTokens: boolean;
  /** Finds the next place a token may start (a token's first character): the one such character, or a class of them. */
  private readonly firstChar: string | undefined;
  private readonly firstChars: RegExp | undefined;

  constructor(tokenizer: Record<string, unknown>, config: Record<string, unknown>, readonly minPiece = MIN_TEXT_PIECE) {
    const added = Array.isArray(tokenizer.added_tokens) ? (tokenizer.added_tokens as AddedTokenJson[]) : [];
    const raw = added.filter((t) => typeof t.content === 'string' && t.content.length > 0 && (t.normalized ?? !t.special) === false);
    this.cutsAtTokens = !raw.some((t) => t.single_word === true);
    // Every raw-text token is matched (that is how the tokenizer splits); only special ones cut.
    for (const t of raw) this.insert(t.content, t.special === true && t.lstrip !== true);
    const firsts = [...new Set(raw.map((t) => t.content[0]))];
    // Chat models' special tokens all start with '<' (or '['): indexOf finds it without a match object per hit.
    if (firsts.length === 1) this.firstChar = firsts[0];
    else if (firsts.length > 1) this.firstChars = new RegExp(`[${firsts.map(escapeClassChar).join('')}]`, 'g');
    this.textProblem = textCutProblem(tokenizer, config);
  }

  /** The text's pieces, in order; their concatenation is the text. */
  cut(text: string): string[] {
    const cuts: number[] = [];
    let segment = 0;
    const n = text.length;
    if (this.cutsAtTokens) {
      for (let i = this.tokenStart(text, 0); i >= 0; ) {
        const match = this.longestAt(text, i);
        if (!match) {
          i = this.tokenStart(text, i + 1);
          continue;
        }
        if (match.cuttable && i > 0) {
          if (this.textProblem === undefined) textCuts(text, segment, i, this.minPiece, cuts);
          cuts.push(i);
          segment = i;
        }
        i = this.tokenStart(text, i + match.length);
      }
    }
    if (this.textProblem === undefined) textCuts(text, segment, n, this.minPiece, cuts);
    if (cuts.length === 0) return [text];
    const pieces: string[] = [];
    let from = 0;
    for (const at of cuts) {
      if (at > from) pieces.push(text.slice(from, at));
      from = at;
    }
    pieces.push(text.slice(from));
    return pieces;
  }

  /** The first place at or after `from` where a token may start; -1 when there is none. */
  private tokenStart(text: string, from: number): number {
    if (this.firstChar !== undefined) return text.indexOf(this.firstChar, from);
    const firsts = this.firstChars;
    if (!firsts) return -1;
    firsts.lastIndex = from;
    return firsts.exec(text)?.index ?? -1;
  }

  private insert(content: string, cuttable: boolean): void {
    let node = this.root;
    for (let i = 0; i < content.length; i++) {
      const c = content.charCodeAt(i);
      let child = node.next.get(c);
      if (!child) node.next.set(c, (child = { next: new Map() }));
      node = child;
    }
    node.token = { length: content.length, cuttable };
  }

  /** The longest token starting at `at`, as the tokenizer's own split takes it. */
  private longestAt(text: string, at: number): TrieNode['token'] {
    let node: TrieNode | undefined = this.root.next.get(text.charCodeAt(at));
    let found: TrieNode['token'];
    let j = at + 1;
    while (node) {
      if (node.token) found = node.token;
      if (j >= text.length) break;
      node = node.next.get(text.charCodeAt(j++));
    }
    return found;
  }
}

const escapeClassChar = (c: string): string => (/[\\\]\[^-]/.test(c) ? `\\${c}` : c);
