/**
 * The dashboard (README "Dashboard"): plain DOM, data from the documented /_emulator routes.
 * Everything shown is set as text (never as HTML): request bodies are client input.
 */

import { startCharts } from './charts.js';

const TOKEN_KEY = 'gateway-emulator-admin-token';
let token = sessionStorage.getItem(TOKEN_KEY) ?? '';
const needsToken = document.body.dataset.token === 'required';

const $ = <T extends HTMLElement>(selector: string) => document.querySelector(selector) as T;

type Json = Record<string, unknown>;

class TokenNeeded extends Error {}

/** One call to the control surface, with the admin token when there is one. */
async function api<T = Json>(method: string, path: string, body?: unknown): Promise<T> {
  if (needsToken && token === '') throw new TokenNeeded();
  const headers: Record<string, string> = {};
  if (token !== '') headers['x-emulator-admin-token'] = token;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/_emulator${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status === 401) {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    askToken();
    throw new TokenNeeded();
  }
  const data = (await res.json()) as Json;
  if (!res.ok) {
    const message = (data.error as { message?: string } | undefined)?.message;
    throw new Error(message ?? `HTTP ${res.status}`);
  }
  return data as T;
}

function askToken(): void {
  $('#token-form').hidden = false;
  $<HTMLInputElement>('#token').focus();
}

/** An element with text children (never parsed as HTML). */
function h(
  tag: string,
  attrs: Record<string, string> = {},
  ...children: Array<Node | string | number | null | undefined>
): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
/** Emulator time (epoch ms) as UTC `YYYY-MM-DD HH:MM:SS.mmm`. */
function stamp(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
}
const timeOf = (ms: number) => stamp(ms).slice(11);
function span(ms: number): string {
  if (ms <= 0) return 'expired';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
const pretty = (value: unknown) =>
  typeof value === 'string' ? value : JSON.stringify(value, null, 2);

function say(message: string): void {
  $('#status').textContent = message;
}

/** Replaces a table body's rows, unless the data did not change (keeps focus and selection). */
const lastRendered = new WeakMap<HTMLElement, string>();
function fill(tbody: HTMLElement, data: unknown, rows: () => HTMLElement[]): void {
  const key = JSON.stringify(data);
  if (lastRendered.get(tbody) === key) return;
  lastRendered.set(tbody, key);
  tbody.replaceChildren(...rows());
}

// ---- clock ----

async function refreshClock(): Promise<void> {
  const clock = await api<{ now: number; offset_ms: number }>('GET', '/clock');
  $('#clock-now').textContent = stamp(clock.now);
  $('#clock-offset').textContent = clock.offset_ms > 0 ? `(+${span(clock.offset_ms)})` : '';
}

for (const button of document.querySelectorAll<HTMLButtonElement>('[data-advance]')) {
  button.addEventListener('click', async () => {
    try {
      await api('POST', '/clock/advance', { ms: Number(button.dataset.advance) });
      await refreshAll();
    } catch (err) {
      report(err);
    }
  });
}

// ---- requests (live journal) ----

interface Entry {
  id: string;
  group: string;
  session: string;
  method: string;
  url: string;
  status: number;
  duration_ms: number;
  at: number;
  fault: string | null;
  aborted: boolean;
  headers: Record<string, string>;
  body: unknown;
}

const JOURNAL_SHOWN = 500;
let entries: Entry[] = [];
let selected: string | undefined;

function matchesFilter(entry: Entry): boolean {
  const group = $<HTMLSelectElement>('#filter-group').value;
  const status = $<HTMLInputElement>('#filter-status').value.trim();
  const path = $<HTMLInputElement>('#filter-path').value.trim();
  const session = $<HTMLInputElement>('#filter-session').value.trim();
  return (
    (group === '' || entry.group === group) &&
    (status === '' || String(entry.status).startsWith(status)) &&
    (path === '' || entry.url.includes(path)) &&
    (session === '' || entry.session === session)
  );
}

function renderJournal(): void {
  const tbody = $('#journal tbody');
  const rows = entries
    .filter(matchesFilter)
    .slice(-JOURNAL_SHOWN)
    .reverse()
    .map((entry) => {
      const open = h('button', { type: 'button', class: 'link' }, entry.url);
      open.addEventListener('click', () => void showDetail(entry.id));
      return h(
        'tr',
        { 'data-id': entry.id, 'aria-selected': String(entry.id === selected) },
        h('td', {}, timeOf(entry.at)),
        h('td', {}, entry.session),
        h('td', {}, entry.group),
        h('td', {}, entry.method),
        h('td', { class: 'path' }, open),
        h(
          'td',
          { class: `status-${String(entry.status)[0]}` },
          entry.aborted ? `${entry.status} (aborted)` : entry.status,
        ),
        h('td', {}, entry.duration_ms),
        h('td', {}, entry.fault ?? ''),
      );
    });
  tbody.replaceChildren(...rows);
}

function addEntry(entry: Entry): void {
  entries.push(entry);
  if (entries.length > 2000) entries = entries.slice(-JOURNAL_SHOWN);
  renderJournal();
}

/** Server-sent event text as `{event, data}` pairs, in order. */
function parseEvents(text: string): Array<{ event: string; data: string }> {
  const events: Array<{ event: string; data: string }> = [];
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (data.length > 0 || event !== 'message') events.push({ event, data: data.join('\n') });
  }
  return events;
}

async function showDetail(id: string): Promise<void> {
  selected = id;
  renderJournal();
  const detail = $('#detail');
  try {
    const entry = await api<
      Entry & {
        response: unknown;
        response_truncated: boolean;
        response_withheld: boolean;
        timeline: Timeline | null;
      }
    >('GET', `/journal/${encodeURIComponent(id)}`);
    const parts: HTMLElement[] = [
      h('h3', {}, `${entry.method} ${entry.url}`),
      h(
        'p',
        {},
        `${entry.status} · ${entry.group} · session ${entry.session} · ${entry.duration_ms} ms · ${stamp(entry.at)}`,
      ),
      ...(entry.timeline ? [h('h4', {}, 'Timeline'), timelineOf(entry.timeline)] : []),
      h('h4', {}, 'Request headers'),
      h('pre', {}, pretty(entry.headers)),
      h('h4', {}, 'Request body'),
      h('pre', {}, entry.body === null ? '(none)' : pretty(entry.body)),
      h('h4', {}, entry.response_truncated ? 'Response (its start)' : 'Response'),
    ];
    if (entry.response_withheld) {
      parts.push(h('p', {}, 'Not kept: the request held a URL credential the stream may echo.'));
    }
    const response = entry.response;
    if (typeof response === 'string' && /^(event|data|:)/m.test(response)) {
      const events = parseEvents(response);
      parts.push(
        h(
          'ol',
          { class: 'events', 'aria-label': 'Stream events in order' },
          ...events.map((e) => h('li', {}, h('code', {}, e.event), h('pre', {}, e.data))),
        ),
      );
    } else {
      parts.push(h('pre', {}, response === null ? '(none)' : pretty(response)));
    }
    detail.replaceChildren(...parts);
  } catch (err) {
    report(err);
  }
}

// ---- a stream's timeline ----

interface Timeline {
  writes: Array<{ at_ms: number; frames: number }>;
  writes_dropped: number;
  frames: number;
  first_content_ms: number | null;
  cut: { kind: 'stream_error' | 'after_bytes'; at_ms: number } | null;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

const ms = (n: number) => `${n.toLocaleString('en', { maximumFractionDigits: 1 })} ms`;

/**
 * A stream's writes on a time axis from the request's arrival: a tick per frame (the frames of
 * one write side by side), the first content frame, the longest gap, and a fault's cut.
 */
function timelineOf(t: Timeline): HTMLElement {
  const width = 600;
  const height = 86;
  const left = 8;
  const right = width - 8;
  const end = Math.max(t.cut?.at_ms ?? 0, t.writes.at(-1)?.at_ms ?? 0, 1);
  const x = (at: number) => left + ((right - left) * at) / end;
  const chart = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `Timeline of ${t.frames} frames over ${ms(end)}`,
  });
  const axis = 58;
  let gap = { from: 0, to: 0 };
  let before: number | undefined;
  for (const write of t.writes) {
    if (before !== undefined && write.at_ms - before > gap.to - gap.from) {
      gap = { from: before, to: write.at_ms };
    }
    before = write.at_ms;
  }
  if (gap.to > gap.from) {
    chart.append(
      svg('rect', {
        class: 'gap',
        x: x(gap.from),
        y: 14,
        width: Math.max(1, x(gap.to) - x(gap.from)),
        height: axis - 14,
      }),
    );
  }
  chart.append(svg('line', { class: 'axis', x1: left, x2: right, y1: axis, y2: axis }));
  for (let i = 0; i <= 4; i++) {
    const at = (end * i) / 4;
    chart.append(svg('line', { class: 'axis', x1: x(at), x2: x(at), y1: axis, y2: axis + 4 }));
    chart.append(
      svg(
        'text',
        {
          class: 'tick-label',
          x: x(at),
          y: axis + 16,
          'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle',
        },
        ms(at),
      ),
    );
  }
  for (const write of t.writes) {
    for (let k = 0; k < write.frames; k++) {
      const line = svg('line', {
        class: 'frame',
        'data-at': write.at_ms,
        x1: x(write.at_ms) + k * 1.5,
        x2: x(write.at_ms) + k * 1.5,
        y1: axis - 22,
        y2: axis,
      });
      line.append(svg('title', {}, `frame at ${ms(write.at_ms)}`));
      chart.append(line);
    }
  }
  if (t.first_content_ms !== null) {
    const at = x(t.first_content_ms);
    chart.append(svg('line', { class: 'first', x1: at, x2: at, y1: 12, y2: axis }));
    chart.append(svg('text', { class: 'label', x: at + 3, y: 22 }, 'first content'));
  }
  if (t.cut) {
    const at = x(t.cut.at_ms);
    chart.append(svg('line', { class: 'cut', x1: at, x2: at, y1: 4, y2: axis }));
    chart.append(
      svg(
        'text',
        { class: 'label', x: at - 3, y: 10, 'text-anchor': 'end' },
        t.cut.kind === 'stream_error' ? 'cut: stream_error' : 'cut: disconnect after_bytes',
      ),
    );
  }
  const facts: Array<[string, string]> = [
    [
      'Frames',
      `${t.frames} in ${t.writes.length} writes${t.writes_dropped > 0 ? ` (+${t.writes_dropped} writes not timed)` : ''}`,
    ],
    [
      'First content frame',
      t.first_content_ms === null ? '–' : `${ms(t.first_content_ms)} after arrival`,
    ],
    ['Longest gap', gap.to > gap.from ? `${ms(gap.to - gap.from)} (from ${ms(gap.from)})` : '–'],
    ['Last frame', ms(t.writes.at(-1)?.at_ms ?? 0)],
  ];
  if (t.cut)
    facts.push([
      'Cut',
      `${t.cut.kind === 'stream_error' ? 'stream_error fault' : 'disconnect after_bytes'} at ${ms(t.cut.at_ms)}`,
    ]);
  const list = h('dl', {});
  for (const [name, value] of facts) list.append(h('dt', {}, name), h('dd', {}, value));
  const box = h('div', { class: 'timeline' });
  box.append(chart, list);
  return box;
}

for (const id of ['#filter-group', '#filter-status', '#filter-path', '#filter-session']) {
  $(id).addEventListener('input', renderJournal);
}
$('#journal-clear').addEventListener('click', async () => {
  try {
    await api('DELETE', '/journal');
    entries = [];
    renderJournal();
  } catch (err) {
    report(err);
  }
});

/** Reads the live journal; reconnects when the stream ends. */
async function follow(): Promise<void> {
  for (;;) {
    try {
      if (needsToken && token === '') throw new TokenNeeded();
      const headers: Record<string, string> =
        token === '' ? {} : { 'x-emulator-admin-token': token };
      const initial = await api<{ requests: Entry[] }>('GET', '/journal');
      entries = initial.requests;
      renderJournal();
      const res = await fetch('/_emulator/journal/stream', { headers });
      if (!res.ok || !res.body) throw new Error(`live journal: HTTP ${res.status}`);
      $('#live').textContent = '(live)';
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffered += value;
        const end = buffered.lastIndexOf('\n\n');
        if (end === -1) continue;
        for (const event of parseEvents(buffered.slice(0, end + 2))) {
          if (event.event === 'entry') addEntry(JSON.parse(event.data) as Entry);
        }
        buffered = buffered.slice(end + 2);
      }
    } catch (err) {
      if (!(err instanceof TokenNeeded)) report(err);
    }
    $('#live').textContent = '(reconnecting)';
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// ---- video tasks and callbacks ----

interface Task {
  task_id: string;
  kind: string;
  session: string;
  key_hash: string | null;
  task_status: string;
  progress: number;
  updated_at: number;
  task_result: { videos: Array<{ url: string; duration: string }> };
}

const taskRows = new Map<string, HTMLElement>();

async function refreshTasks(): Promise<void> {
  // The newest 200: the table is for watching, and a test may hold 100 000 tasks.
  const { tasks } = await api<{ tasks: Task[] }>('GET', '/tasks?limit=200');
  const tbody = $('#task-table tbody');
  const seen = new Set<string>();
  for (const task of [...tasks].reverse()) {
    seen.add(task.task_id);
    let row = taskRows.get(task.task_id);
    if (!row) {
      row = h(
        'tr',
        { 'data-task': task.task_id },
        h('td', {}, task.task_id),
        h('td', {}, task.kind),
        h('td', {}, task.session),
        h('td', {}, task.key_hash ?? ''),
        h('td', { class: 'task-status' }),
        h(
          'td',
          {},
          h('progress', { max: '100', 'aria-label': `Progress of task ${task.task_id}` }),
        ),
        h('td', { class: 'updated' }),
        h('td', { class: 'result' }),
      );
      taskRows.set(task.task_id, row);
    }
    tbody.append(row); // newest first: moves each row to its place
    (row.querySelector('.task-status') as HTMLElement).textContent = task.task_status;
    (row.querySelector('progress') as HTMLProgressElement).value = task.progress;
    (row.querySelector('.updated') as HTMLElement).textContent = timeOf(task.updated_at);
    const result = row.querySelector('.result') as HTMLElement;
    const video = task.task_result.videos[0];
    if (video && !result.querySelector('video')) {
      result.replaceChildren(
        h('video', {
          src: video.url,
          controls: '',
          preload: 'metadata',
          muted: '',
          'aria-label': `Result of task ${task.task_id}`,
        }),
      );
    } else if (!video && result.firstChild) result.replaceChildren();
  }
  for (const [id, row] of taskRows) {
    if (!seen.has(id)) {
      row.remove();
      taskRows.delete(id);
    }
  }
}

interface Delivery {
  task_id: string;
  task_status: string;
  url: string;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
}

async function refreshCallbacks(): Promise<void> {
  const { callbacks } = await api<{ callbacks: Delivery[] }>('GET', '/callbacks');
  fill($('#callback-table tbody'), callbacks, () =>
    [...callbacks]
      .reverse()
      .map((d) =>
        h(
          'tr',
          {},
          h('td', {}, d.task_id),
          h('td', {}, d.task_status),
          h('td', { class: 'path' }, d.url),
          h('td', {}, d.state),
          h('td', {}, d.attempts),
          h('td', {}, d.last_error ?? d.last_status ?? ''),
        ),
      ),
  );
}

// ---- prompt cache ----

interface CacheEntry {
  id: string;
  session: string;
  key_hash: string;
  model: string;
  tokens: number;
  reads: number;
  created_at: number;
  time_left_ms: number;
}

async function refreshCache(): Promise<void> {
  const { entries: cached } = await api<{ entries: CacheEntry[] }>('GET', '/cache');
  fill($('#cache-table tbody'), cached, () =>
    cached.map((e) =>
      h(
        'tr',
        {},
        h('td', {}, h('code', {}, e.id)),
        h('td', {}, e.session),
        h('td', {}, e.key_hash),
        h('td', {}, e.model),
        h('td', {}, e.tokens),
        h('td', {}, e.reads),
        h('td', {}, timeOf(e.created_at)),
        h('td', {}, span(e.time_left_ms)),
      ),
    ),
  );
}

// ---- faults and stubs ----

const removeButton = (label: string, path: string) => {
  const button = h('button', { type: 'button', 'aria-label': label }, 'Remove');
  button.addEventListener('click', async () => {
    try {
      await api('DELETE', path);
      await refreshAll();
    } catch (err) {
      report(err);
    }
  });
  return button;
};

const matchText = (match: unknown) =>
  match && typeof match === 'object' && Object.keys(match).length > 0
    ? JSON.stringify(match)
    : 'every request';

interface Fault {
  id: number;
  session: string;
  match: unknown;
  kind: string;
  status: number | null;
  remaining: number | null;
  fired: number;
}

async function refreshFaults(): Promise<void> {
  const { faults } = await api<{ faults: Fault[] }>('GET', '/faults');
  fill($('#fault-table tbody'), faults, () =>
    faults.map((f) =>
      h(
        'tr',
        {},
        h('td', {}, f.id),
        h('td', {}, f.session),
        h('td', { class: 'path' }, matchText(f.match)),
        h('td', {}, f.kind),
        h('td', {}, f.status ?? ''),
        h('td', {}, f.remaining ?? '∞'),
        h('td', {}, f.fired),
        h('td', {}, removeButton(`Remove fault ${f.id}`, `/faults/${f.id}`)),
      ),
    ),
  );
}

interface Stub {
  id: number;
  session: string;
  match?: unknown;
  reply?: string;
  sequence?: unknown[];
  remaining: number | null;
  fired: number;
}

async function refreshStubs(): Promise<void> {
  const { replies } = await api<{ replies: Stub[] }>('GET', '/replies');
  fill($('#stub-table tbody'), replies, () =>
    replies.map((s) =>
      h(
        'tr',
        {},
        h('td', {}, s.id),
        h('td', {}, s.session),
        h('td', { class: 'path' }, matchText(s.match)),
        h(
          'td',
          {},
          s.reply ?? (s.sequence ? `sequence of ${s.sequence.length}` : '(JSON or tools)'),
        ),
        h('td', {}, s.remaining ?? '∞'),
        h('td', {}, s.fired),
        h('td', {}, removeButton(`Remove stub ${s.id}`, `/replies/${s.id}`)),
      ),
    ),
  );
}

const numberOf = (selector: string) => {
  const value = $<HTMLInputElement>(selector).value.trim();
  return value === '' ? undefined : Number(value);
};

$('#fault-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const kind = $<HTMLSelectElement>('#fault-kind').value;
  const rule: Json = { path: $<HTMLInputElement>('#fault-path').value.trim(), kind };
  const status = numberOf('#fault-status');
  const times = numberOf('#fault-times');
  const delay = numberOf('#fault-delay');
  if (status !== undefined) rule.status = status;
  if (times !== undefined) rule.times = times;
  if (delay !== undefined) rule.delay_ms = delay;
  try {
    await api('POST', '/faults', rule);
    say('');
    await refreshFaults();
  } catch (err) {
    report(err);
  }
});

$('#stub-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const match: Json = {};
  const group = $<HTMLSelectElement>('#stub-group').value;
  const regex = $<HTMLInputElement>('#stub-regex').value;
  if (group !== '') match.group = group;
  if (regex !== '') match.prompt_regex = regex;
  const rule: Json = { reply: $<HTMLInputElement>('#stub-reply').value, match };
  const times = numberOf('#stub-times');
  if (times !== undefined) rule.times = times;
  try {
    await api('POST', '/replies', rule);
    say('');
    await refreshStubs();
  } catch (err) {
    report(err);
  }
});

// ---- token, errors, refresh loop ----

$('#token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  token = $<HTMLInputElement>('#token').value;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('#token-form').hidden = true;
  say('');
  void refreshAll();
});

function report(err: unknown): void {
  if (err instanceof TokenNeeded) return;
  say(err instanceof Error ? err.message : String(err));
}

/** A poll under way: the next one is skipped rather than piled on a slow server. */
let polling = false;

function poll(): void {
  if (polling) return;
  polling = true;
  void refreshAll().finally(() => {
    polling = false;
  });
}

async function refreshAll(): Promise<void> {
  try {
    await refreshClock();
    await Promise.all([
      refreshTasks(),
      refreshCallbacks(),
      refreshCache(),
      refreshFaults(),
      refreshStubs(),
    ]);
  } catch (err) {
    report(err);
  }
}

if (needsToken && token === '') askToken();
void refreshAll();
void follow();
setInterval(poll, 1000);
startCharts({
  headers: (): Record<string, string> | undefined => {
    if (needsToken && token === '') return undefined;
    return token === '' ? {} : { 'x-emulator-admin-token': token };
  },
  report,
  live: (text) => {
    $('#stats-live').textContent = text;
  },
});
