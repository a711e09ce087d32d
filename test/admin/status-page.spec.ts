import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { useFakeCluster } from '../support/router-cluster';
import { postJson } from '../support/router-app';
import { admin, TOKEN } from './admin-support';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** What the page functions below read of the DOM (this project's types have no DOM lib). */
interface PageElement {
  textContent: string | null;
  dataset: Record<string, string | undefined>;
}
type PageWindow = { document: { getElementById(id: string): PageElement | null; querySelector(selector: string): PageElement | null } };

const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('status page /admin/status in headless Chromium', () => {
  const cluster = useFakeCluster({ admin: { token: TOKEN }, generation_servers: { router: { type: 'kv_cache_aware' } } });
  let profile: string;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    profile = mkdtempSync(join(tmpdir(), 'disagg-router-chromium-'));
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
    page = browser.pages()[0] ?? (await browser.newPage());
  }, 60_000);

  // Declared after the cluster's: runs after the router closed.
  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  const text = (selector: string): Promise<string> => page.locator(selector).innerText();

  it('asks for the token and turns a wrong one away', async () => {
    const res = await page.goto(`${cluster.router.url}/admin/status`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    // No other site may frame the page (clickjacking of its admin-token form).
    expect(res?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.locator('#token').waitFor({ state: 'visible' });
    expect(await page.locator('#status').isHidden()).toBe(true);
    await page.fill('#token', 'not-the-admin-token-at-all');
    await page.click('#login button[type=submit]');
    await page.waitForFunction(() => (globalThis as unknown as PageWindow).document.getElementById('error')?.textContent?.includes('not accepted'));
    expect(await page.locator('#status').isHidden()).toBe(true);
  });

  it('renders the pools, their policies and servers of the running router', async () => {
    await page.fill('#token', TOKEN);
    await page.click('#login button[type=submit]');
    await page.locator('tr[data-server-id]').nth(1).waitFor();
    const servers = (await admin(cluster.router.url, 'GET', 'servers')).body.servers as { id: string; url: string; role: string }[];
    expect(await page.locator('tr[data-server-id]').count()).toBe(servers.length);
    for (const s of servers) {
      const row = `table[data-pool="${s.role}"] tr[data-server-id="${s.id}"]`;
      expect(await text(`${row} td.url`)).toBe(s.url);
      expect(await text(`${row} td.state`)).toBe('ready');
      expect(await text(`${row} td.breaker`)).toBe('closed');
    }
    expect(await text('span.policy[data-pool="context"]')).toContain('round_robin');
    expect(await text('span.policy[data-pool="generation"]')).toContain('kv_cache_aware');
  });

  it('draws the request rate from live traffic', async () => {
    for (let i = 0; i < 5; i++) expect((await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: `hello ${i}` })).status).toBe(200);
    await page.waitForFunction(() => Number((globalThis as unknown as PageWindow).document.getElementById('rate-spark')?.dataset.max) > 0, undefined, { timeout: 15_000 });
    expect(Number(await page.locator('#rate-spark').getAttribute('data-points'))).toBeGreaterThan(0);
  });

  it('shows a drained server as draining without a reload', async () => {
    const servers = (await admin(cluster.router.url, 'GET', 'servers')).body.servers as { id: string; role: string }[];
    const gen = servers.find((s) => s.role === 'generation')!;
    expect((await admin(cluster.router.url, 'POST', `servers/${gen.id}/drain`)).status).toBe(200);
    await page.waitForFunction(
      (id) => (globalThis as unknown as PageWindow).document.querySelector(`tr[data-server-id="${id}"] td.state`)?.textContent === 'draining',
      gen.id,
      { timeout: 15_000 },
    );
    expect((await admin(cluster.router.url, 'POST', `servers/${gen.id}/resume`)).status).toBe(200);
  });

  it('serves its data only with the token', async () => {
    expect((await admin(cluster.router.url, 'GET', 'stats', undefined, null)).status).toBe(401);
    const stats = await admin(cluster.router.url, 'GET', 'stats');
    expect(stats.status).toBe(200);
    expect(stats.body.requests_total).toBeGreaterThanOrEqual(5);
  });
});
