import type { ServerState } from '../../servers';

/**
 * TensorRT-LLM's tie-break: among the servers with the lowest load, the `counter`-th (mod the
 * number tied), the counter advancing on every pick.
 */
export class LeastLoadedPicker {
  private counter = 0;

  pick(candidates: readonly ServerState[], load: (s: ServerState) => number): ServerState {
    let min = Infinity;
    const loads = candidates.map((s) => {
      const l = load(s);
      if (l < min) min = l;
      return l;
    });
    const tied = candidates.filter((_, i) => loads[i] === min);
    return this.tieBreak(tied);
  }

  /** A pick made without a tie to break still moves the rotation on, as TensorRT-LLM's counter. */
  advance(): void {
    this.counter++;
  }

  /** Round robin among equally good choices. */
  tieBreak<T>(tied: readonly T[]): T {
    const chosen = tied[this.counter % tied.length];
    this.counter++;
    return chosen;
  }
}
