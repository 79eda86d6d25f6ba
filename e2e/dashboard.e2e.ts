import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../src/index.js';

/**
 * The dashboard in headless Chromium against a started emulator (with an admin token, so the
 * page's token prompt is exercised too). The browser is the system's: CHROME_PATH, else
 * `chromium` on the PATH. Without one this fails: it never skips.
 */

const SHOTS = new URL('./screenshots/', import.meta.url);
const ADMIN = 'e2e-admin-token';
const KEY = { authorization: 'Bearer e2e-key', 'content-type': 'application/json' };

function browserPath(): string {
  const fromEnv = process.env.CHROME_PATH;
  if (fromEnv) return fromEnv;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch {}
  }
  throw new Error(
    'No Chromium found: set CHROME_PATH, or install it (Debian: apt-get install -y chromium).',
  );
}

let emu: Emulator;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  emu = await startEmulator({ adminToken: ADMIN, callbackAllowedHosts: ['127.0.0.1'] });
  const executablePath = browserPath();
  expect(existsSync(executablePath), executablePath).toBe(true);
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1366, height: 1400 } });
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  page.on('requestfailed', (request) => {
    // A request the browser itself cancels (a video's once it has its metadata, the live
    // journal when the page goes) is no failure; anything else is.
    const reason = request.failure()?.errorText ?? '';
    if (reason !== 'net::ERR_ABORTED')
      consoleErrors.push(`request failed: ${request.url()} ${reason}`);
  });
});

afterAll(async () => {
  await browser?.close();
  await emu?.close();
});

/** The page as seen from its top (the header sticks, so a full-page capture would repeat it). */
const shot = async (name: string) => {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname });
};

describe('dashboard at /_emulator/ui', () => {
  it('loads without the token, asks for it once and keeps it in sessionStorage', async () => {
    await page.goto(`${emu.url}/_emulator/ui`);
    const tokenField = page.getByLabel('Admin token');
    await expect.poll(() => tokenField.isVisible()).toBe(true);
    await tokenField.fill(ADMIN);
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.locator('#live').textContent()).toBe('(live)');
    expect(await page.evaluate(() => sessionStorage.getItem('gateway-emulator-admin-token'))).toBe(
      ADMIN,
    );
    await page.reload();
    await expect.poll(() => page.locator('#live').textContent()).toBe('(live)');
    expect(await page.locator('#token-form').isHidden()).toBe(true);
  });

  it('shows a task created through the API, then its success and video after "Advance 1 min"', async () => {
    const created = (await (
      await fetch(`${emu.url}/videogen/v1/videos/text2video`, {
        method: 'POST',
        headers: KEY,
        body: JSON.stringify({ model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' }),
      })
    ).json()) as { data: { task_id: string } };
    const id = created.data.task_id;
    const row = page.locator(`#task-table tr[data-task="${id}"]`);
    await expect.poll(() => row.locator('.task-status').textContent()).toBe('submitted');
    await shot('tasks-submitted');
    await page.getByRole('button', { name: 'Advance 1 min' }).click();
    await expect.poll(() => row.locator('.task-status').textContent()).toBe('succeed');
    const video = row.locator('video');
    await expect
      .poll(() => video.evaluate((v: HTMLVideoElement) => v.duration), { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect(await row.locator('progress').evaluate((p: HTMLProgressElement) => p.value)).toBe(100);
    await shot('tasks-succeeded');
  });

  it('shows a chat request in the live journal within a second, with its answer', async () => {
    const res = await fetch(`${emu.url}/v1/chat/completions`, {
      method: 'POST',
      headers: KEY,
      body: JSON.stringify({ model: 'gpt-e2e', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    const seenAt = Date.now();
    const row = page.locator('#journal tbody tr', { hasText: '/v1/chat/completions' }).first();
    await row.waitFor({ timeout: 1000 });
    expect(Date.now() - seenAt).toBeLessThan(1000);
    // a cached prompt, so the cache table has an entry with its tokens and time left
    await fetch(`${emu.url}/messages-api/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': 'e2e-key',
        'msgapi-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        model: 'claude-e2e',
        max_tokens: 20,
        system: [
          { type: 'text', text: 'policy '.repeat(1500), cache_control: { type: 'ephemeral' } },
        ],
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const cached = page.locator('#cache-table tbody tr').first();
    await expect.poll(() => cached.textContent()).toContain('claude-e2e');
    expect(await cached.textContent()).toContain('4 min');
    await row.getByRole('button', { name: '/v1/chat/completions' }).click();
    await expect.poll(() => page.locator('#detail').textContent()).toContain('chat.completion');
    const detail = (await page.locator('#detail').textContent()) ?? '';
    expect(detail).toContain('[REDACTED]');
    expect(detail).not.toContain('e2e-key');
    await shot('journal');
  });

  it('adds a fault from the page; the next API call fails with it', async () => {
    const form = page.getByRole('form', { name: 'Add a fault' });
    await form.getByLabel('Path').fill('/v1/chat/completions');
    await form.getByLabel('Status').fill('503');
    await form.getByRole('button', { name: 'Add fault' }).click();
    await expect.poll(() => page.locator('#fault-table tbody tr').count()).toBe(1);
    const res = await fetch(`${emu.url}/v1/chat/completions`, {
      method: 'POST',
      headers: KEY,
      body: JSON.stringify({ model: 'gpt-e2e', messages: [{ role: 'user', content: 'again' }] }),
    });
    expect(res.status).toBe(503);
    await expect
      .poll(() => page.locator('#journal tbody tr').first().textContent())
      .toContain('503');
    await shot('dashboard');
    await page.getByRole('button', { name: 'Remove fault 1' }).click();
    await expect.poll(() => page.locator('#fault-table tbody tr').count()).toBe(0);
  });

  it('logged no console error', () => {
    expect(consoleErrors, consoleErrors.join('\n')).toEqual([]);
  });
});
