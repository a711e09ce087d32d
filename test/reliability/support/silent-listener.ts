import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';

export interface SilentListener {
  url: string;
  close(): Promise<void>;
}

/**
 * A loopback port whose listener never accepts: a child process listens with a backlog of 1
 * and blocks its event loop, and two connections fill the accept queue, so the kernel drops
 * any further SYN and a new connection attempt hangs until the caller's connect timeout.
 */
export async function startSilentListener(): Promise<SilentListener> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('net').createServer();
       s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
         process.stdout.write(s.address().port + '\\n');
         setImmediate(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
  });
  const fillers: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    fillers.push(s);
    await new Promise<void>((resolve, reject) => {
      s.once('connect', resolve);
      s.once('error', reject);
    });
  }
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of fillers) s.destroy();
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
