import { describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { buildConfig } from '../../src/config';
import { createAppLogger, resolveAppLogger, PinoLoggerService } from '../../src/observability';
import { requestContextStorage } from '../../src/observability/context/request-context';
import { generationHandler, json } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { pools, useFakeCluster, useRouterCluster } from '../support/router-cluster';
import { LogCapture } from './log-capture';

describe('structured logs of a running router', () => {
  const capture = new LogCapture();
  const c = useFakeCluster({ max_retries: 0, logging: { level: 'debug' } }, { logDestination: capture });

  it('writes JSON lines through pino for Nest loggers app-wide', () => {
    // Startup lines of other modules (routers, servers) came through the same destination.
    const startup = capture.lines.filter((l) => typeof l.context === 'string');
    expect(startup.length).toBeGreaterThan(0);
    for (const l of startup) expect(typeof l.level).toBe('string');
    expect(startup.some((l) => l.level === 'info')).toBe(true);
  });

  it('tags the lines of a request with its id, never with its prompt', async () => {
    const res = await postJson(`${c.url}/v1/completions`, { model: 'm', prompt: 'a secret prompt' }, { 'x-request-id': 'log-req-1' });
    expect(res.status).toBe(200);
    await waitFor(() => capture.withId('log-req-1').some((l) => l.msg === 'request done'), 5_000, 'request line');
    const line = capture.withId('log-req-1').find((l) => l.msg === 'request done')!;
    expect(line).toMatchObject({ level: 'debug', context: 'Request', status: 200, mode: 'disagg', generationServer: c.gen.url });
    expect(JSON.stringify(capture.lines)).not.toContain('a secret prompt');
  });

  it('tags warnings of a failed request with its id', async () => {
    c.gen.handler = (_req, res) => json(res, 500, { error: 'boom' });
    try {
      const res = await postJson(`${c.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-request-id': 'log-req-2' });
      expect(res.status).toBe(502);
    } finally {
      c.gen.handler = generationHandler();
    }
    await waitFor(() => capture.withId('log-req-2').some((l) => l.level === 'warn'), 5_000, 'warning line');
    const warn = capture.withId('log-req-2').find((l) => l.level === 'warn')!;
    expect(String(warn.msg)).toContain('502');
    // Lines of other requests do not carry this id.
    expect(capture.withId('log-req-1').some((l) => l.level === 'warn')).toBe(false);
  });
});

describe('logs at info level (no async context)', () => {
  const capture = new LogCapture();
  const c = useRouterCluster({
    workers: { gen: (_req, res) => json(res, 500, { error: 'boom' }) },
    config: (cl) => pools(undefined, cl.gen, { max_retries: 0, logging: { level: 'info' } }),
    logDestination: capture,
  });

  it('writes no line for a request that went well, and tags the warning of one that failed', async () => {
    c.gen.handler = generationHandler();
    const before = capture.lines.length;
    expect((await postJson(`${c.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-request-id': 'info-ok' })).status).toBe(200);
    c.gen.handler = (_req, res) => json(res, 500, { error: 'boom' });
    expect((await postJson(`${c.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-request-id': 'info-bad' })).status).toBe(502);
    await waitFor(() => capture.withId('info-bad').length > 0, 5_000, 'warning line');
    expect(capture.withId('info-ok')).toEqual([]);
    const warn = capture.withId('info-bad')[0];
    expect(warn).toMatchObject({ level: 'warn', context: 'OpenAI' });
    expect(String(warn.msg)).toMatch(/^502 /);
    expect(capture.lines.slice(before).every((l) => l.level !== 'info' && l.level !== 'debug')).toBe(true);
  });
});

describe('logging.log_payloads: true', () => {
  const capture = new LogCapture();
  const c = useRouterCluster({
    workers: { gen: generationHandler({ chunks: 2 }) },
    config: (cl) => pools(undefined, cl.gen, { logging: { level: 'info', log_payloads: true } }),
    logDestination: capture,
  });

  it('logs the prompt and the answer, streamed or not, under the request id', async () => {
    expect((await postJson(`${c.url}/v1/completions`, { model: 'm', prompt: 'visible prompt' }, { 'x-request-id': 'pay-1' })).status).toBe(200);
    const streamed = await fetch(`${c.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'pay-2' },
      body: JSON.stringify({ model: 'm', prompt: 'streamed prompt', stream: true }),
    });
    await streamed.text();
    await waitFor(() => capture.withId('pay-1').length >= 2 && capture.withId('pay-2').length >= 2, 5_000, 'payload lines');
    const [req1, res1] = ['request payload', 'response payload'].map((m) => capture.withId('pay-1').find((l) => l.msg === m));
    expect(req1).toMatchObject({ context: 'Payload', path: '/v1/completions', body: { prompt: 'visible prompt' } });
    expect(res1).toMatchObject({ status: 200 });
    expect(JSON.parse(String(res1!.body)).choices[0].text).toBe('AA');
    const res2 = capture.withId('pay-2').find((l) => l.msg === 'response payload');
    expect(String(res2!.body)).toContain('data: [DONE]');
    expect(res2!.bytes).toBe(Buffer.byteLength(String(res2!.body)));
  });
});

describe('the app logger', () => {
  it('censors prompts and completions unless payload logging is on', async () => {
    const quietCapture = new LogCapture();
    const q = await createAppLogger({ level: 'info', destination: quietCapture });
    q.log({ msg: 'payload', prompt: 'secret', messages: [{ content: 'secret' }], choices: ['secret'] }, 'Test');
    expect(quietCapture.lines[0]).toMatchObject({ msg: 'payload', context: 'Test', prompt: '[redacted]', messages: '[redacted]', choices: '[redacted]' });
    const loudCapture = new LogCapture();
    const loud = await createAppLogger({ level: 'info', logPayloads: true, destination: loudCapture });
    loud.log({ msg: 'payload', prompt: 'secret' }, 'Test');
    expect(loudCapture.lines[0]).toMatchObject({ prompt: 'secret' });
  });

  it('maps Nest calls: context, stack, levels, and the request id of the current context', async () => {
    const capture = new LogCapture();
    const logger = await createAppLogger({ level: 'info', destination: capture });
    logger.debug('hidden', 'Test');
    logger.error('failed', 'Error: x\n    at somewhere (file.ts:1:1)', 'Test');
    requestContextStorage.run({ requestId: 'ctx-7', arrivedAt: 0 }, () => logger.warn('inside', 'Test'));
    logger.warn('[tagged-9] upstream failed', 'Test');
    logger.warn('[not an id] kept as is', 'Test');
    logger.setLogLevels(['debug', 'log']);
    logger.debug('shown now', 'Test');
    expect(capture.lines.map((l) => [l.level, l.msg, l.context, l.reqId ?? null])).toEqual([
      ['error', 'failed', 'Test', null],
      ['warn', 'inside', 'Test', 'ctx-7'],
      ['warn', 'upstream failed', 'Test', 'tagged-9'],
      ['warn', '[not an id] kept as is', 'Test', null],
      ['debug', 'shown now', 'Test', null],
    ]);
    expect(String(capture.lines[0].stack)).toContain('at somewhere');
  });

  it('takes its level from logging.level, DISAGG_LOG_LEVEL, or a Nest level list', async () => {
    const fromEnv = buildConfig({ generation_servers: { urls: ['localhost:1'] } }, 'test', { DISAGG_LOG_LEVEL: 'warn' });
    const a = (await resolveAppLogger(fromEnv.logging, { destination: new LogCapture() })) as PinoLoggerService;
    expect(a.pino.level).toBe('warn');
    const b = (await resolveAppLogger(fromEnv.logging, { logger: ['error'], destination: new LogCapture() })) as PinoLoggerService;
    expect(b.pino.level).toBe('error');
    const c = (await resolveAppLogger(fromEnv.logging, { logger: false, destination: new LogCapture() })) as PinoLoggerService;
    expect(c.pino.level).toBe('silent');
    const own = new Logger('Own');
    expect(await resolveAppLogger(fromEnv.logging, { logger: own })).toBe(own);
  });
});
