import type { DestinationStream } from 'pino';

/** A pino destination that keeps the parsed JSON lines, for tests. */
export class LogCapture implements DestinationStream {
  readonly lines: Record<string, unknown>[] = [];

  write(line: string): void {
    for (const part of line.split('\n')) if (part) this.lines.push(JSON.parse(part) as Record<string, unknown>);
  }

  withId(id: string): Record<string, unknown>[] {
    return this.lines.filter((l) => l.reqId === id);
  }
}
