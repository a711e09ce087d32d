import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { buildConfig, AppConfigModule } from '../../src/config';
import { HttpSessionClosedError, HttpSessionModule, HttpSessionProvider } from '../../src/http-session';
import { ServerRegistry } from '../../src/servers';
import { WorkerClient, WorkerClientModule } from '../../src/worker-client';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter } from '../support/router-app';

describe('the HTTP session follows the app container', () => {
  it('is not open before init: every accessor throws the clear error', () => {
    const session = new HttpSessionProvider({ connectionsPerServer: 4, connectTimeoutMs: 1000, keepAliveTimeoutMs: 1000, requestTimeoutMs: 1000, maxControlAnswerBytes: 1024 * 1024 });
    expect(session.isOpen).toBe(false);
    expect(() => session.axios).toThrow(HttpSessionClosedError);
    expect(() => session.dispatcher).toThrow('HttpSession is not open');
    expect(() => session.http).toThrow('HttpSession is not open');
    expect(() => session.request({ origin: 'http://127.0.0.1:1', path: '/' })).toThrow('HttpSession is not open');
  });

  it('a worker client built before init does not crash, and works once the session opens', async () => {
    const worker = await new FakeWorker(() => undefined).start();
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule.forRoot({ config: buildConfig({ generation_servers: { urls: [worker.url] } }) }), HttpSessionModule.forRoot(), WorkerClientModule],
    }).compile();
    // compile() builds the providers; onModuleInit has not run yet.
    const client = moduleRef.get(WorkerClient);
    expect(moduleRef.get(HttpSessionProvider).isOpen).toBe(false);
    for (const call of [client.health(worker.url, 1000), client.serverInfo(worker.url, 1000), client.drainKvEvents(worker.url, 1000), client.perfMetrics(worker.url, 1000)]) {
      await expect(call).rejects.toThrow(HttpSessionClosedError);
    }
    await moduleRef.init();
    expect((await client.health(worker.url, 2000)).ok).toBe(true);
    await moduleRef.close();
    // After destroy: a clear error, never a silent "unhealthy".
    await expect(client.health(worker.url, 1000)).rejects.toThrow('HttpSession is not open (closed)');
    await worker.close();
  });

  it('opens on init, leaves no socket open after app.close(), and throws after it', async () => {
    const ctx = await new FakeWorker(contextHandler()).start();
    const gen = await new FakeWorker(generationHandler()).start();
    const router = await startRouter({ context_servers: { urls: [ctx.url] }, generation_servers: { urls: [gen.url] } });
    const session = router.app.get(HttpSessionProvider);
    expect(session.isOpen).toBe(true);
    expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(200);
    // Keep-alive: the session holds its connections to both workers between requests.
    expect(session.openSockets()).toBeGreaterThan(0);
    expect(ctx.sockets.size + gen.sockets.size).toBeGreaterThan(0);
    const registry = router.app.get(ServerRegistry);
    const workers = router.app.get(WorkerClient);
    await router.close();
    expect(session.isOpen).toBe(false);
    expect(session.openSockets()).toBe(0);
    expect(() => session.axios).toThrow('HttpSession is not open (closed)');
    // The workers see every connection of the router closed.
    const deadline = Date.now() + 5000;
    while (ctx.sockets.size + gen.sockets.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(ctx.sockets.size + gen.sockets.size).toBe(0);
    await expect(workers.health(registry.list()[0].url, 1000)).rejects.toThrow(HttpSessionClosedError);
    await ctx.close();
    await gen.close();
  });

  it('destroy aborts an in-flight upstream call', async () => {
    const hanging = await new FakeWorker(() => undefined).start();
    const moduleRef = await Test.createTestingModule({ imports: [HttpSessionModule.register({ requestTimeoutMs: 60_000 })] }).compile();
    await moduleRef.init();
    const session = moduleRef.get(HttpSessionProvider);
    const call = session.request({ origin: hanging.url, path: '/v1/completions', method: 'POST', body: '{}' });
    const settled = call.then(() => 'answered', (err: Error) => err.name);
    const deadline = Date.now() + 5000;
    while (hanging.received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await moduleRef.close();
    expect(await settled).not.toBe('answered');
    await hanging.close();
  });
});
