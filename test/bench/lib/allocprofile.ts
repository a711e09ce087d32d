import { readFileSync } from 'node:fs';

interface AllocNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocNode[];
}

/** The frame as the CPU summary names it: function, file under src/ or test/ or a package, line. */
function frameName(f: AllocNode['callFrame']): string {
  const short = f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|test)\//, '$1/');
  return `${f.functionName || '(anonymous)'}  ${short}:${f.lineNumber + 1}`;
}

const isAppFrame = (url: string): boolean => /\/(src|test)\//.test(url) && !url.includes('node_modules');

/**
 * Top allocation sites of a sampling heap profile taken with the objects collected since
 * (`--profile=alloc`): the bytes a function allocated itself, and the bytes allocated with
 * each of the app's own functions on the stack, per request when `requests` is given.
 */
export function summarizeAllocations(file: string, requests: number, top = 30): string {
  let head: AllocNode;
  try {
    head = (JSON.parse(readFileSync(file, 'utf8')) as { head: AllocNode }).head;
  } catch (err) {
    return `no allocation profile at ${file}: ${(err as Error).message}`;
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  const walk = (node: AllocNode, appStack: string[]): void => {
    const name = frameName(node.callFrame);
    const stack = isAppFrame(node.callFrame.url) && !appStack.includes(name) ? [...appStack, name] : appStack;
    if (node.selfSize > 0) {
      total += node.selfSize;
      self.set(name, (self.get(name) ?? 0) + node.selfSize);
      for (const f of stack) inclusive.set(f, (inclusive.get(f) ?? 0) + node.selfSize);
    }
    for (const c of node.children) walk(c, stack);
  };
  walk(head, []);
  const per = Math.max(1, requests);
  const size = (bytes: number): string => `${(bytes / per / 1024).toFixed(1).padStart(7)} KiB ${((bytes / total) * 100).toFixed(1).padStart(5)}%`;
  const lines = [`${(total / 1024 / 1024).toFixed(1)} MiB allocated over ${requests} requests: ${(total / per / 1024).toFixed(1)} KiB per request (sampled)`, '', 'top allocation sites (per request, share):'];
  for (const [k, b] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${size(b)}  ${k}`);
  lines.push('', "bytes allocated under the app's own functions:");
  for (const [k, b] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${size(b)}  ${k}`);
  return lines.join('\n');
}
