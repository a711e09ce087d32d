import type { ChildProcess } from 'node:child_process';

/** True once the child is gone: a signal leaves exitCode null and sets signalCode instead. */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}
