import type { BlockKey } from './kv-block-table';

interface TrieNode {
  children: Map<BlockKey, TrieNode>;
  sessions: Set<string>;
}

const node = (): TrieNode => ({ children: new Map(), sessions: new Set() });

/**
 * Prefix tree of block-hash chains -> session ids. A session id sits on every node of its
 * path, so the longest matching prefix of a query is found in one walk down the tree.
 */
export class BlockHashTrie {
  private readonly root = node();

  insert(sessionId: string, hashes: readonly BlockKey[]): void {
    let n = this.root;
    for (const h of hashes) {
      let child = n.children.get(h);
      if (!child) {
        child = node();
        n.children.set(h, child);
      }
      n = child;
      n.sessions.add(sessionId);
    }
  }

  /** Takes the session off its path and prunes the branches left empty. */
  remove(sessionId: string, hashes: readonly BlockKey[]): void {
    const path: [TrieNode, BlockKey][] = [];
    let n = this.root;
    for (const h of hashes) {
      const child = n.children.get(h);
      if (!child) break;
      path.push([n, h]);
      n = child;
      n.sessions.delete(sessionId);
    }
    for (let i = path.length - 1; i >= 0; i--) {
      const [parent, key] = path[i];
      const child = parent.children.get(key)!;
      if (child.sessions.size || child.children.size) break;
      parent.children.delete(key);
    }
  }

  /** The deepest node's first session that `valid` accepts, and that depth in blocks. */
  longestPrefixMatch(hashes: readonly BlockKey[], valid: (sessionId: string) => boolean): { sessionId?: string; depth: number } {
    let n = this.root;
    let best: { sessionId?: string; depth: number } = { depth: 0 };
    for (let depth = 1; depth <= hashes.length; depth++) {
      const child = n.children.get(hashes[depth - 1]);
      if (!child) break;
      n = child;
      for (const id of n.sessions) {
        if (valid(id)) {
          best = { sessionId: id, depth };
          break;
        }
      }
    }
    return best;
  }

  get empty(): boolean {
    return this.root.children.size === 0;
  }
}
