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
/** The screenshots the docs show (docs/dashboard.md), made by this run. */
const DOCS = new URL('../docs/', import.meta.url);
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
  emu = await startEmulator({
    adminToken: ADMIN,
    callbackAllowedHosts: ['127.0.0.1'],
    // A paced stream's first content frame comes this long after its arrival.
    streamTtftMs: 300,
  });
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
/** A message whose system prompt (`word` 1500 times) is marked for the prompt cache. */
const cachedPrompt = (word: string) =>
  fetch(`${emu.url}/messages-api/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': 'e2e-key',
      'msgapi-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      model: 'claude-e2e',
      max_tokens: 20,
      system: [{ type: 'text', text: word.repeat(1500), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hi' }],
    }),
  }).then(async (r) => (await r.json()) as { usage: { cache_read_input_tokens: number } });

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
    await cachedPrompt('policy ');
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

  it('draws live charts of the traffic, each updated within two steps, counted as the journal', async () => {
    await page.getByLabel('Step').selectOption('1');
    await page.getByLabel('Window').selectOption('60');
    await expect.poll(() => page.locator('#stats-live').textContent()).toBe('(live)');
    const charts = ['rate', 'latency', 'tokens', 'tasks', 'streams'];
    /** Per chart: how many of its canvas's pixels are drawn, and a digest of them. */
    const pixels = () =>
      page.evaluate((ids) => {
        return ids.map((id) => {
          const canvas = document.querySelector(`#chart-${id} canvas`) as HTMLCanvasElement;
          const data = (canvas.getContext('2d') as CanvasRenderingContext2D).getImageData(
            0,
            0,
            canvas.width,
            canvas.height,
          ).data;
          let drawn = 0;
          let digest = 0;
          for (let i = 0; i < data.length; i += 4) {
            if ((data[i + 3] as number) === 0) continue;
            drawn++;
            digest =
              (digest * 31 +
                (data[i] as number) +
                7 * (data[i + 1] as number) +
                13 * (data[i + 2] as number) +
                i) >>>
              0;
          }
          return { drawn, digest };
        });
      }, charts);
    const before = await pixels();

    // Traffic: answers of each status class, a cached prompt read back, a task, a paced stream.
    const chat = (body: object, headers: Record<string, string> = {}) =>
      fetch(`${emu.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...KEY, ...headers },
        body: JSON.stringify(body),
      });
    const hello = { model: 'gpt-e2e', messages: [{ role: 'user', content: 'hello' }] };
    const paced = chat({ ...hello, stream: true }, { 'x-emulator-stream-delay-ms': '100' });
    const statuses = [
      (await chat(hello)).status,
      (await chat({ model: 'gpt-e2e' })).status,
      (await chat(hello, { 'x-emulator-fault': '503' })).status,
    ];
    expect(statuses).toEqual([200, 400, 503]);
    await cachedPrompt('rules ');
    expect((await cachedPrompt('rules ')).usage.cache_read_input_tokens).toBeGreaterThan(0);
    await fetch(`${emu.url}/videogen/v1/videos/text2video`, {
      method: 'POST',
      headers: KEY,
      body: JSON.stringify({ model_name: 'vid-v1-6', prompt: 'a dog', duration: '5' }),
    });
    const trafficAt = Date.now();
    const streamed = await paced;
    expect(streamed.status).toBe(200);
    const streamText = await streamed.text();

    // Every chart draws, and has changed within two steps (2 s) of the traffic.
    await expect
      .poll(
        async () => {
          const now = await pixels();
          return now.map((p, i) => p.drawn > 0 && p.digest !== before[i]?.digest);
        },
        { timeout: 2000 + Math.max(0, 2000 - (Date.now() - trafficAt)), interval: 100 },
      )
      .toEqual(charts.map(() => true));

    // The stats' counts for the window are the journal's, group by group and class by class.
    const admin = { 'x-emulator-admin-token': ADMIN };
    const stats = (await (
      await fetch(`${emu.url}/_emulator/stats?window_s=60&step_s=1`, { headers: admin })
    ).json()) as {
      steps: Array<{ at: number; groups: Record<string, { requests: Record<string, number> }> }>;
    };
    const from = stats.steps[0]?.at ?? 0;
    const journal = (
      (await (await fetch(`${emu.url}/_emulator/journal`, { headers: admin })).json()) as {
        requests: Array<{ group: string; at: number; status: number; aborted: boolean }>;
      }
    ).requests.filter((e) => e.at >= from);
    const zero = () => ({ '2xx': 0, '4xx': 0, '5xx': 0, aborted: 0 }) as Record<string, number>;
    const counted: Record<string, Record<string, number>> = {};
    const journaled: Record<string, Record<string, number>> = {};
    for (const group of ['chat', 'messages', 'video']) {
      const sums = zero();
      for (const step of stats.steps) {
        for (const [c, n] of Object.entries(step.groups[group]?.requests ?? {}))
          sums[c] = (sums[c] ?? 0) + n;
      }
      counted[group] = sums;
      journaled[group] = zero();
    }
    for (const e of journal) {
      const c = e.aborted || e.status === 0 ? 'aborted' : `${String(e.status)[0]}xx`;
      const sums = journaled[e.group] as Record<string, number>;
      sums[c] = (sums[c] ?? 0) + 1;
    }
    expect(counted).toEqual(journaled);
    // (each class driven above is there: 2xx, 4xx and 5xx of chat, two messages, a task)
    expect(
      [counted.chat?.['2xx'], counted.chat?.['4xx'], counted.chat?.['5xx']].every(
        (n) => (n ?? 0) > 0,
      ),
    ).toBe(true);
    expect(counted.messages?.['2xx']).toBeGreaterThanOrEqual(2);
    expect(counted.video?.['2xx']).toBeGreaterThanOrEqual(1);

    // The paced stream's timeline: its content frames 100 ms apart, the first after the ttft.
    const streamId = (
      (await (await fetch(`${emu.url}/_emulator/journal`, { headers: admin })).json()) as {
        requests: Array<{ id: string; body: { stream?: boolean } }>;
      }
    ).requests.find((e) => e.body?.stream === true)?.id;
    expect(streamId).toBeDefined();
    expect(streamText.endsWith('data: [DONE]\n\n')).toBe(true);
    await page
      .locator(`#journal tbody tr[data-id="${streamId}"]`)
      .getByRole('button', { name: '/v1/chat/completions' })
      .click();
    const frames = page.locator('#detail .timeline line.frame');
    await expect.poll(() => frames.count()).toBeGreaterThan(5);
    const at = (await frames.evaluateAll((lines) =>
      lines.map((l) => Number(l.getAttribute('data-at'))),
    )) as number[];
    const writes = [...new Set(at)];
    // The first write holds the frames before the content (at once); then one per pause.
    const first = writes[1] as number;
    expect(first).toBeGreaterThanOrEqual(300);
    expect(first).toBeLessThan(300 + 150);
    // Each later write on the pace's schedule: the writer keeps deadlines from the first pause
    // (a late frame is followed by an early one), so the k-th is 100·k ms after the first (the
    // first itself may be a few ms late).
    const late = writes.slice(1).map((t, k) => t - first - 100 * k);
    expect(late.length).toBeGreaterThan(5);
    for (const ms of late) {
      expect(ms).toBeGreaterThanOrEqual(-5);
      expect(ms).toBeLessThan(60);
    }
    expect(await page.locator('#detail .timeline').textContent()).toContain('First content frame');

    // The screenshots of docs/dashboard.md, light and dark.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: new URL('dashboard-light.png', DOCS).pathname });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(300);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: new URL('dashboard-dark.png', DOCS).pathname });
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('logged no console error', () => {
    expect(consoleErrors, consoleErrors.join('\n')).toEqual([]);
  });
});
