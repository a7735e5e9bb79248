import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { APT_INSTALL_TIMEOUT_MS, APT_UPDATE_TIMEOUT_MS, ensureDebianPackage } from '../fixtures/debian-package.js';

/** Debian's chromium, which the browser test drives (installed with apt-get when missing). */
const CHROMIUM = '/usr/bin/chromium';

/** How long the page may take to show what the member knows: a few polls of the page. */
const SHOWN_TIMEOUT_MS = 10_000;

/** A job name that is markup: the page must show it as text. */
const HOSTILE_NAME = '<img src=x onerror="document.title=1">&amp;';

const started: Cluster[] = [];
let browser: Browser | null = null;
/** Why the browser test cannot run here, or null when it can. */
let skipReason: string | null = null;

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

async function single(): Promise<Cluster> {
  const c = new Cluster([], { storage: 'memory', http: { listen: '127.0.0.1:0' } });
  started.push(c);
  await c.start();
  await c.waitForLeader({ timeoutMs: 10_000 });
  return c;
}

beforeAll(async () => {
  skipReason = await ensureDebianPackage('chromium', CHROMIUM);
  if (skipReason !== null) return;
  try {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  } catch (error) {
    skipReason = `chromium did not start through playwright-core: ${(error as Error).message.split('\n')[0]}`;
  }
}, APT_UPDATE_TIMEOUT_MS + APT_INSTALL_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
});

describe('the dashboard', () => {
  it('is served at GET / as one page with no token, loading nothing from elsewhere', async () => {
    const c = await single();
    const answer = await fetch(`http://${c.httpAddress}/`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = answer.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    const page = await answer.text();
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).not.toMatch(/\b(src|href)=/);
  });

  it('shows the leader and the last run in a headless chromium, the next slot once it runs, and that the member does not answer, keeping what it showed', async (ctx) => {
    if (skipReason !== null || browser === null) {
      console.warn(`Skipping the dashboard's browser test: ${skipReason}`);
      ctx.skip();
      return;
    }
    const c = await single();
    c.schedule('tick', { every: '1s' }, () => undefined);
    c.schedule(HOSTILE_NAME, { every: '1h' }, () => undefined);
    const nextYear = new Date().getUTCFullYear() + 1;
    c.schedule('launch', { at: new Date(Date.UTC(nextYear, 0, 1)) }, () => undefined);
    c.consume('thumbs', () => undefined);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    try {
      await page.goto(`http://${c.httpAddress}/`);
      const text = (selector: string) => () => page.locator(selector).first().textContent();
      await expect.poll(text('#leader'), { timeout: SHOWN_TIMEOUT_MS }).toBe(c.id);
      await expect.poll(text(`#members tr[data-member="${c.id}"]`), { timeout: SHOWN_TIMEOUT_MS }).toMatch(/leader.*yes/);
      // Durations as the page writes them, in whole milliseconds, then seconds (a stranger saw
      // '0.651213999997708 ms ago' and '36082.589649 ms ago' in the members' table).
      expect(await page.evaluate('[0.651213999997708, 36082.589649, -0.19384765625].map(duration).join("|")')).toBe('1 ms|36.1 s|0 ms');

      const lastRun = text('#jobs tr[data-job="tick"] td.last');
      await expect.poll(lastRun, { timeout: SHOWN_TIMEOUT_MS }).toContain(`${c.id}: succeeded`);
      const first = await lastRun();
      // The next slot, a second later, replaces it once its run is recorded.
      await expect.poll(lastRun, { timeout: SHOWN_TIMEOUT_MS }).not.toBe(first);
      expect(await lastRun()).toContain(`${c.id}: succeeded`);
      await expect.poll(() => page.locator('#timeline .lane[data-job="tick"] .slot.ok').count(), { timeout: SHOWN_TIMEOUT_MS }).toBeGreaterThanOrEqual(2);
      expect(await page.locator('#timeline .lane[data-job="tick"] .slot.ok').first().textContent()).toMatch(new RegExp(`${c.id} succeeded \\+\\d+ ms`));

      // A next slot on another day shows its date (it read '00:00:00.000', as if tonight); one today, its time alone.
      await expect.poll(text('#jobs tr[data-job="launch"] td:nth-child(4)'), { timeout: SHOWN_TIMEOUT_MS }).toBe(`${nextYear}-01-01 00:00:00.000`);
      // (Within a few seconds of midnight, UTC, tick's next slot may be tomorrow's.)
      expect(await text('#jobs tr[data-job="tick"] td:nth-child(4)')()).toMatch(/^(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d\.\d{3}$/);
      const nearMidnight = new Date().getUTCHours() === 23 && new Date().getUTCMinutes() === 59;
      if (!nearMidnight) expect(await text('#jobs tr[data-job="tick"] td:nth-child(4)')()).toMatch(/^\d\d:\d\d:\d\d\.\d{3}$/);

      // Names are shown as the text they are, never run as markup.
      await expect.poll(() => page.locator('#jobs td', { hasText: HOSTILE_NAME }).count(), { timeout: SHOWN_TIMEOUT_MS }).toBe(1);
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.title()).toBe('cronraft');

      await expect.poll(() => c.state().version.active >= FANOUT_VERSION && c.state().topics.length === 1, { timeout: SHOWN_TIMEOUT_MS }).toBe(true);
      await (await c.emitItems('thumbs', [1, 2, 3])).settled({ timeoutMs: SHOWN_TIMEOUT_MS });
      await expect.poll(text('#topics tr[data-topic="thumbs"]'), { timeout: SHOWN_TIMEOUT_MS }).toContain('3/3');
      expect(errors).toEqual([]);

      // The member stops answering: the page says so and keeps what it showed, then recovers.
      await page.route('**/v1/state', (route) => route.abort('connectionrefused'));
      await expect.poll(() => page.locator('#status.stale').count(), { timeout: SHOWN_TIMEOUT_MS }).toBe(1);
      expect(await text('#status')()).toMatch(/^could not read the member \(.+\); trying again$/);
      expect(await text('#leader')()).toBe(c.id);
      expect(await lastRun()).toContain(`${c.id}: succeeded`);
      await page.unroute('**/v1/state');
      await expect.poll(() => page.locator('#status.stale').count(), { timeout: SHOWN_TIMEOUT_MS }).toBe(0);
      expect(await text('#status')()).toMatch(/^updated at /);
    } finally {
      await page.close();
    }
  });
});
