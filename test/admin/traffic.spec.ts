import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { RouterRegistry } from '../../src/routing';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler, type FakeHandler } from '../support/fake-worker';
import { startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { admin, complete, errorOf, Gate, heldStreamHandler, openStream, TestPoliciesModule, TOKEN, whenReady } from './admin-support';

const COMPLETIONS = '/v1/completions';

describe('admin changes and live traffic', () => {
  let gate: Gate;
  let a: FakeWorker;
  let b: FakeWorker;
  let router: RunningRouter;

  beforeAll(async () => {
    gate = new Gate();
    a = await new FakeWorker(heldStreamHandler(gate, 'a')).start();
    b = await new FakeWorker(heldStreamHandler(gate, 'b')).start();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  beforeEach(async () => {
    gate = new Gate();
    a.handler = heldStreamHandler(gate, 'a');
    b.handler = heldStreamHandler(gate, 'b');
    a.received.length = 0;
    b.received.length = 0;
    // Aggregated mode (no context pool): each request makes one generation call.
    // Frequent health rounds: a resumed server is prepared again on the next one.
    router = await startRouter({ generation_servers: { urls: [a.url] }, admin: { token: TOKEN }, health: { interval_s: 0.1 } }, [TestPoliciesModule]);
  });
  afterEach(async () => {
    gate.open();
    await router?.close();
  });

  const idOf = (w: FakeWorker): string => `generation-127.0.0.1-${w.port}`;
  const state = async (id: string): Promise<Record<string, unknown> | undefined> =>
    ((await admin(router.url, 'GET', 'servers')).body.servers as Array<Record<string, unknown>>).find((s) => s.id === id);

  it('sends traffic to an added server once it is ready', async () => {
    const added = await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ id: idOf(b), source: 'admin' });
    await whenReady(router, idOf(b));
    for (let i = 0; i < 4; i++) await complete(router.url);
    // Round robin over two servers: two each.
    expect(a.requests(COMPLETIONS)).toHaveLength(2);
    expect(b.requests(COMPLETIONS)).toHaveLength(2);
  });

  it('sends nothing new to a drained server while its stream completes, then removes it', async () => {
    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const stream = await openStream(router.url);
    const busy = a.requests(COMPLETIONS).length === 1 ? a : b;
    const other = busy === a ? b : a;
    expect(busy.requests(COMPLETIONS)).toHaveLength(1);

    const drained = await admin(router.url, 'POST', `servers/${idOf(busy)}/drain?remove=true`);
    expect(drained.status).toBe(200);
    expect(drained.body).toMatchObject({ removed: false, remove_when_idle: true, server: { state: 'draining', active_requests: 1 } });
    expect(await state(idOf(busy))).toMatchObject({ state: 'draining', active_requests: 1 });
    // Refused while busy, even though it is draining.
    const refused = await admin(router.url, 'DELETE', `servers/${idOf(busy)}`);
    expect(refused.status).toBe(409);
    expect(errorOf(refused).code).toBe('server_busy');

    for (let i = 0; i < 3; i++) await complete(router.url);
    expect(busy.requests(COMPLETIONS)).toHaveLength(1);
    expect(other.requests(COMPLETIONS)).toHaveLength(3);

    gate.open();
    const rest = await stream.rest();
    expect(stream.first).toContain('first');
    expect(rest).toContain('last');
    expect(rest).toContain('data: [DONE]');
    await waitFor(async () => (await state(idOf(busy))) === undefined, 10_000, 'drained server removed');
    expect(busy.aborted).toBe(0);
    const cfg = await admin(router.url, 'GET', 'config');
    const changes = cfg.body.admin_changes as Record<string, unknown[]>;
    // Removing the config server is remembered; removing the added one just forgets it.
    if (busy === a) expect(changes.removed_servers).toEqual([{ url: a.url, role: 'generation' }]);
    else expect(changes.added_servers).toEqual([]);
  });

  it('keeps a drained server without remove=true, out of rotation', async () => {
    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const drained = await admin(router.url, 'POST', `servers/${idOf(a)}/drain`);
    expect(drained.body).toMatchObject({ removed: false, remove_when_idle: false, server: { state: 'draining' } });
    for (let i = 0; i < 2; i++) await complete(router.url);
    expect(a.requests(COMPLETIONS)).toHaveLength(0);
    expect(b.requests(COMPLETIONS)).toHaveLength(2);
    expect(await state(idOf(a))).toMatchObject({ state: 'draining', active_requests: 0 });
  });

  it('puts a drained server back in rotation on resume, after it passes preparation again', async () => {
    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const notDraining = await admin(router.url, 'POST', `servers/${idOf(a)}/resume`);
    expect(notDraining.status).toBe(409);
    expect(errorOf(notDraining).code).toBe('not_draining');
    await admin(router.url, 'POST', `servers/${idOf(a)}/drain?remove=true`);
    expect(await state(idOf(a))).toBeUndefined();
    await admin(router.url, 'POST', `servers/${idOf(b)}/drain`);
    const resumed = await admin(router.url, 'POST', `servers/${idOf(b)}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ id: idOf(b), state: 'preparing' });
    await whenReady(router, idOf(b));
    await complete(router.url);
    expect(b.requests(COMPLETIONS)).toHaveLength(1);
  });

  it('removes an idle drained server at once with remove=true', async () => {
    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const drained = await admin(router.url, 'POST', `servers/${idOf(b)}/drain?remove=true`);
    expect(drained.body).toMatchObject({ removed: true });
    expect(await state(idOf(b))).toBeUndefined();
  });

  it('sends nothing to a deleted server; force deletes a busy one and its stream still completes', async () => {
    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const deleted = await admin(router.url, 'DELETE', `servers/${idOf(b)}`);
    expect(deleted.status).toBe(200);
    for (let i = 0; i < 3; i++) await complete(router.url);
    expect(b.requests(COMPLETIONS)).toHaveLength(0);
    expect(a.requests(COMPLETIONS)).toHaveLength(3);

    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const stream = await openStream(router.url);
    const busy = b.requests(COMPLETIONS).length === 1 ? b : a;
    expect((await admin(router.url, 'DELETE', `servers/${idOf(busy)}`)).status).toBe(409);
    const forced = await admin(router.url, 'DELETE', `servers/${idOf(busy)}?force=true`);
    expect(forced.status).toBe(200);
    expect(await state(idOf(busy))).toBeUndefined();
    gate.open();
    expect(await stream.rest()).toContain('data: [DONE]');
    // The request that started on the removed server still gave its load back.
    const registry = router.app.get(ServerRegistry);
    expect(registry.list().every((s) => s.activeRequests === 0)).toBe(true);
  });

  it('switches the policy while a stream is in flight: the stream completes and both routers end at zero', async () => {
    await admin(router.url, 'POST', 'servers', { url: b.url, role: 'generation' });
    await whenReady(router, idOf(b));
    const manager = router.app.get(RouterRegistry);
    const before = manager.router('generation');
    const stream = await openStream(router.url);
    expect(before.snapshot().in_flight).toBe(1);

    const switched = await admin(router.url, 'PUT', 'routers/generation', { type: 'first_server', label: 'pinned' });
    expect(switched.status).toBe(200);
    expect(switched.body).toMatchObject({ type: 'first_server', args: { label: 'pinned' }, state: { in_flight: 0 } });
    const after = manager.router('generation');
    expect(after).not.toBe(before);
    // The new policy serves new requests while the old stream is still open.
    await complete(router.url);
    await complete(router.url);
    const servedAfter = [...a.requests(COMPLETIONS), ...b.requests(COMPLETIONS)].length;
    expect(servedAfter).toBe(3);
    expect(before.snapshot().in_flight).toBe(1);

    gate.open();
    expect(await stream.rest()).toContain('data: [DONE]');
    await waitFor(() => before.snapshot().in_flight === 0, 5_000, 'old router released the stream');
    expect(after.snapshot().in_flight).toBe(0);
    const routers = await admin(router.url, 'GET', 'routers');
    const generation = (routers.body.routers as Array<{ pool: string; state: { in_flight: number; servers: Array<Record<string, number>> } }>).find((r) => r.pool === 'generation')!;
    expect(generation.state.in_flight).toBe(0);
    expect(generation.state.servers.every((s) => s.active_requests === 0 && s.active_tokens === 0)).toBe(true);
  });
});

describe('draining a context server mid-request', () => {
  it('lets the context call finish, sends the next requests elsewhere, then removes the server', async () => {
    const gate = new Gate();
    const answer = contextHandler();
    let held = false;
    // Whichever context server gets the first request holds it until the gate opens.
    const handler: FakeHandler = async (req, res, w) => {
      if (!held) {
        held = true;
        await gate.promise;
      }
      await answer(req, res, w);
    };
    const ctxA = await new FakeWorker(handler).start();
    const ctxB = await new FakeWorker(handler).start();
    const gen = await new FakeWorker(generationHandler()).start();
    const router = await startRouter({ context_servers: { urls: [ctxA.url, ctxB.url] }, generation_servers: { urls: [gen.url] }, admin: { token: TOKEN } });
    try {
      const pending = complete(router.url);
      await waitFor(() => ctxA.requests(COMPLETIONS).length + ctxB.requests(COMPLETIONS).length === 1, 10_000, 'first context call');
      const [busy, other] = ctxA.requests(COMPLETIONS).length === 1 ? [ctxA, ctxB] : [ctxB, ctxA];
      const id = `context-127.0.0.1-${busy.port}`;
      const drained = await admin(router.url, 'POST', `servers/${id}/drain?remove=true`);
      expect(drained.body).toMatchObject({ removed: false, server: { role: 'context', state: 'draining', active_requests: 1 } });
      await complete(router.url);
      await complete(router.url);
      expect(busy.requests(COMPLETIONS)).toHaveLength(1);
      expect(other.requests(COMPLETIONS)).toHaveLength(2);
      gate.open();
      expect((await pending).choices).toBeDefined();
      await waitFor(() => router.app.get(ServerRegistry).get(id) === undefined, 10_000, 'drained context server removed');
      expect(gen.requests(COMPLETIONS)).toHaveLength(3);
    } finally {
      gate.open();
      await router.close();
      await Promise.all([ctxA.close(), ctxB.close(), gen.close()]);
    }
  });
});
