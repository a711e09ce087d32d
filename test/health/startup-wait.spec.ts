import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Module } from '@nestjs/common';
import { ClientTraffic } from '../../src/admission';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { unusedPort } from '../support/free-port';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

/** Two routes outside the inference paths: what the startup guard holds is the marker alone. */
@Controller('probe')
class ProbeController {
  @Get('marked')
  @ClientTraffic()
  marked(): { ok: boolean } {
    return { ok: true };
  }

  @Get('unmarked')
  unmarked(): { ok: boolean } {
    return { ok: true };
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('startup wait', () => {
  let router: RunningRouter | undefined;
  let worker: SimWorker | undefined;
  afterEach(async () => {
    await router?.close();
    await worker?.close();
    router = undefined;
    worker = undefined;
  });
  const health = async (r: RunningRouter) => {
    const res = await fetch(`${r.url}/health`);
    return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
  };

  it('serves 503 saying it is starting until the configured servers are ready, without blocking listen', async () => {
    const port = await unusedPort();
    router = await startRouter(
      { generation_servers: { urls: [`127.0.0.1:${port}`] }, health: { interval_s: 0.1, timeout_s: 2, startup_wait_s: 120 } },
      undefined,
      { waitReady: false },
    );
    const waiting = await health(router);
    expect(waiting.status).toBe(503);
    expect(waiting.body.reason).toMatch(/^starting: 0 of 1 servers ready; waiting up to \d+ s more$/);
    const refused = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.json.error).toMatchObject({ code: 'starting', type: 'service_unavailable' });
    expect((refused.json.error as { message: string }).message).toMatch(/router is starting: no generation server is ready yet/);

    worker = await startSimWorker({ role: 'generation', tokenizer: 'bytes', port });
    await waitFor(async () => (await health(router!)).status === 200, 20_000, '/health 200');
    const ok = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 });
    expect(ok.status).toBe(200);
  });

  it('gives up waiting after startup_wait_s and then reports the plain cause', async () => {
    const port = await unusedPort();
    router = await startRouter(
      { generation_servers: { urls: [`127.0.0.1:${port}`] }, health: { interval_s: 0.1, timeout_s: 2, startup_wait_s: 0.5 } },
      undefined,
      { waitReady: false },
    );
    await waitFor(async () => (await health(router!)).body.reason === 'no generation server is ready', 20_000, 'wait over');
    const refused = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi' });
    expect(refused.status).toBe(503);
    expect((refused.json.error as { code: string }).code).not.toBe('starting');
  });

  it('holds the routes marked @ClientTraffic() during the wait, whatever their path, and no other', async () => {
    const port = await unusedPort();
    router = await startRouter(
      { generation_servers: { urls: [`127.0.0.1:${port}`] }, health: { interval_s: 0.1, timeout_s: 2, startup_wait_s: 120 } },
      [ProbeModule],
      { waitReady: false },
    );
    const held = await fetch(`${router.url}/probe/marked`);
    expect(held.status).toBe(503);
    expect(held.headers.get('retry-after')).toBe('1');
    expect(((await held.json()) as { error: { code: string } }).error.code).toBe('starting');
    const free = await fetch(`${router.url}/probe/unmarked`);
    expect(free.status).toBe(200);
    expect(await free.json()).toEqual({ ok: true });

    worker = await startSimWorker({ role: 'generation', tokenizer: 'bytes', port });
    await waitFor(async () => (await health(router!)).status === 200, 20_000, '/health 200');
    const released = await fetch(`${router.url}/probe/marked`);
    expect(released.status).toBe(200);
  });
});
