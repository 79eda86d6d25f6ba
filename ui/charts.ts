/**
 * The Traffic card: live charts of `/_emulator/stats/stream` (docs/dashboard.md), drawn with
 * uPlot (bundled into app.js: a canvas chart library of ~50 KB, no CDN).
 */
import uPlot from 'uplot';

const GROUPS = ['chat', 'messages', 'video'] as const;
type Group = (typeof GROUPS)[number];
const CLASSES = ['2xx', '4xx', '5xx', 'aborted'] as const;
const TASK_STATUSES = ['submitted', 'processing', 'succeed', 'failed'] as const;

interface GroupStep {
  requests: Record<(typeof CLASSES)[number], number>;
  rate: number;
  latency_ms: { p50: number | null; p95: number | null; p99: number | null };
  tokens: { input: number; cache_read: number; cache_creation: number; output: number };
  open_streams: number;
}
interface Step {
  at: number;
  groups: Record<Group, GroupStep>;
}
type Tasks = Record<(typeof TASK_STATUSES)[number], number>;
interface Window {
  now: number;
  window_s: number;
  step_s: number;
  steps: Step[];
  tasks: Tasks;
}

/** What the charts need of the page: the admin token's headers, and where to say a problem. */
export interface ChartsHost {
  headers(): Record<string, string> | undefined;
  report(err: unknown): void;
  live(text: string): void;
}

const $ = <T extends HTMLElement>(selector: string) => document.querySelector(selector) as T;
const color = (name: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(`--c-${name}`).trim();
const cssVar = (name: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(`--${name}`).trim();

/** Steps by start time, oldest first; the tasks seen at each step (a snapshot as it closed). */
let steps: Step[] = [];
const taskHistory = new Map<number, Tasks>();
let stepS = 5;
let windowS = 300;
const charts = new Map<string, uPlot>();
let stream: AbortController | undefined;

/** The groups the charts show (one, or all summed). */
const shown = (): Group[] => {
  const group = $<HTMLSelectElement>('#stats-group').value;
  return group === '' ? [...GROUPS] : [group as Group];
};

const sum = (step: Step, pick: (g: GroupStep) => number) =>
  shown().reduce((total, group) => total + pick(step.groups[group]), 0);

/** The slowest shown group's percentile (percentiles of groups do not add up). */
const slowest = (step: Step, p: 'p50' | 'p95' | 'p99'): number | null => {
  let worst: number | null = null;
  for (const group of shown()) {
    const value = step.groups[group].latency_ms[p];
    if (value !== null && (worst === null || value > worst)) worst = value;
  }
  return worst;
};

function axes(unit?: string): uPlot.Axis[] {
  const stroke = cssVar('muted');
  const grid = { stroke: cssVar('line'), width: 1 };
  return [
    { stroke, grid, ticks: grid },
    {
      stroke,
      grid,
      ticks: grid,
      size: 56,
      ...(unit ? { label: unit, labelSize: 16 } : {}),
    },
  ];
}

function chartWidth(el: HTMLElement): number {
  return Math.max(280, el.clientWidth - 18);
}

type Data = uPlot.AlignedData;

/** Each chart: its series and how its data is read from the steps. */
interface ChartSpec {
  id: string;
  series: () => uPlot.Series[];
  data: () => Data;
  scales?: uPlot.Scales;
  axes?: () => uPlot.Axis[];
}

const times = () => steps.map((s) => s.at / 1000);

/** Stacked values: each series drawn as the sum of itself and those below it. */
function stacked(rows: number[][]): number[][] {
  const out: number[][] = [];
  let below = rows[0]?.map(() => 0) ?? [];
  for (const row of rows) {
    const top = row.map((v, i) => v + (below[i] ?? 0));
    out.push(top);
    below = top;
  }
  return out;
}

/**
 * The prompt tokens of a step, the cache's included: chat's `prompt_tokens` hold the cached
 * ones; messages' `input_tokens` do not (they come beside it, read and created).
 */
const promptTokens = (step: Step) =>
  shown().reduce((total, group) => {
    const t = step.groups[group].tokens;
    return total + (group === 'chat' ? t.input : t.input + t.cache_read + t.cache_creation);
  }, 0);

const rateRows = () => CLASSES.map((c) => steps.map((s) => sum(s, (g) => g.requests[c]) / stepS));

const bars = uPlot.paths.bars?.({ size: [0.7, 40] });

const SPECS: ChartSpec[] = [
  {
    id: 'chart-rate',
    // Drawn top of the stack first, so each class's band shows under the next.
    series: () =>
      [...CLASSES].reverse().map((c, i) => ({
        label: c,
        stroke: color(c),
        fill: color(c),
        width: 1,
        value: (_u: uPlot, _v: number, _s: number, idx: number | null) =>
          idx === null ? '–' : (rateRows()[CLASSES.length - 1 - i]?.[idx] ?? 0).toFixed(2),
      })),
    data: () => [times(), ...stacked(rateRows()).reverse()],
  },
  {
    id: 'chart-latency',
    series: () =>
      (['p50', 'p95', 'p99'] as const).map((p) => ({
        label: p,
        stroke: color(p),
        width: 2,
        spanGaps: false,
        points: { show: true, size: 4 },
      })),
    data: () => [
      times(),
      ...(['p50', 'p95', 'p99'] as const).map((p) => steps.map((s) => slowest(s, p))),
    ],
  },
  {
    id: 'chart-tokens',
    series: () => [
      ...(['input', 'cache_read', 'cache_creation', 'output'] as const).map((k) => ({
        label: k.replace('_', ' '),
        stroke: color(k.replace('_', '-')),
        fill: `${color(k.replace('_', '-'))}cc`,
        ...(bars ? { paths: bars } : {}),
        scale: 'tokens',
      })),
      {
        label: 'cache-read share %',
        stroke: color('share'),
        width: 2,
        dash: [4, 3],
        scale: '%',
        spanGaps: false,
      },
    ],
    data: () => {
      const rows = (['input', 'cache_read', 'cache_creation', 'output'] as const).map((k) =>
        steps.map((s) => sum(s, (g) => g.tokens[k])),
      );
      const share = steps.map((s) => {
        const read = sum(s, (g) => g.tokens.cache_read);
        const prompt = promptTokens(s);
        return prompt === 0 ? null : Math.round((1000 * read) / prompt) / 10;
      });
      return [times(), ...rows, share];
    },
    scales: { '%': { range: [0, 100] } },
    axes: () => {
      const [x, y] = axes() as [uPlot.Axis, uPlot.Axis];
      return [
        x,
        { ...y, scale: 'tokens' },
        { ...y, scale: '%', side: 1, grid: { show: false }, size: 40 },
      ];
    },
  },
  {
    id: 'chart-tasks',
    series: () =>
      TASK_STATUSES.map((status) => ({ label: status, stroke: color(status), width: 2 })),
    data: () => {
      const at = [...taskHistory.keys()].sort((a, b) => a - b);
      return [
        at.map((t) => t / 1000),
        ...TASK_STATUSES.map((status) => at.map((t) => taskHistory.get(t)?.[status] ?? 0)),
      ];
    },
  },
  {
    id: 'chart-streams',
    series: () =>
      shown().map((group) => ({
        label: group,
        stroke: color(group),
        width: 2,
        paths: uPlot.paths.stepped?.({ align: 1 }),
      })),
    data: () => [
      times(),
      ...shown().map((group) => steps.map((s) => s.groups[group].open_streams)),
    ],
  },
];

/** (Re)makes every chart: at start, when the group or colour scheme changes. */
function build(): void {
  for (const chart of charts.values()) chart.destroy();
  charts.clear();
  for (const spec of SPECS) {
    const el = $(`#${spec.id}`);
    const chart = new uPlot(
      {
        width: chartWidth(el),
        height: 200,
        series: [{}, ...spec.series()],
        axes: spec.axes ? spec.axes() : axes(),
        ...(spec.scales ? { scales: spec.scales } : {}),
        cursor: { drag: { x: false, y: false } },
        legend: { live: true },
      },
      spec.data(),
      el,
    );
    charts.set(spec.id, chart);
  }
}

function redraw(): void {
  for (const spec of SPECS) charts.get(spec.id)?.setData(spec.data());
}

/** Keeps a window's steps: a closed step replaces its place, or comes after the last. */
function addStep(step: Step): void {
  const at = steps.findIndex((s) => s.at >= step.at);
  if (at === -1) steps.push(step);
  else if (steps[at]?.at === step.at) steps[at] = step;
  else steps.splice(at, 0, step);
  const keep = Math.ceil(windowS / stepS);
  if (steps.length > keep) steps = steps.slice(-keep);
  while (taskHistory.size > keep) taskHistory.delete(taskHistory.keys().next().value as number);
}

/** Server-sent events of a text, and the rest not yet whole. */
function events(text: string): { events: Array<{ event: string; data: string }>; rest: string } {
  const end = text.lastIndexOf('\n\n');
  if (end === -1) return { events: [], rest: text };
  const out: Array<{ event: string; data: string }> = [];
  for (const block of text.slice(0, end).split('\n\n')) {
    let event = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data += line.slice(5).trimStart();
    }
    if (data !== '') out.push({ event, data });
  }
  return { events: out, rest: text.slice(end + 2) };
}

/** Follows the live stats (again after a settings change or a dropped connection). */
async function follow(host: ChartsHost): Promise<void> {
  stream?.abort();
  const controller = new AbortController();
  stream = controller;
  stepS = Number($<HTMLSelectElement>('#stats-step').value);
  windowS = Number($<HTMLSelectElement>('#stats-window').value);
  while (!controller.signal.aborted) {
    try {
      const headers = host.headers();
      if (headers === undefined) throw new Error('no token');
      const res = await fetch(`/_emulator/stats/stream?window_s=${windowS}&step_s=${stepS}`, {
        headers,
        signal: controller.signal,
      });
      if (!res.ok || !res.body) throw new Error(`live stats: HTTP ${res.status}`);
      host.live('(live)');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const read = events(text + value);
        text = read.rest;
        for (const e of read.events) {
          if (e.event === 'window') {
            const w = JSON.parse(e.data) as Window;
            steps = w.steps;
            taskHistory.clear();
            taskHistory.set(w.now, w.tasks);
          } else if (e.event === 'step') {
            const s = JSON.parse(e.data) as { now: number; step: Step; tasks: Tasks };
            addStep(s.step);
            taskHistory.set(s.now, s.tasks);
          }
        }
        redraw();
      }
    } catch (err) {
      if (controller.signal.aborted) return;
      if (!(err instanceof Error && err.message === 'no token')) host.report(err);
    }
    host.live('(reconnecting)');
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

export function startCharts(host: ChartsHost): void {
  build();
  for (const id of ['#stats-step', '#stats-window']) {
    $(id).addEventListener('change', () => void follow(host));
  }
  $('#stats-group').addEventListener('change', () => {
    build();
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', build);
  let resizing: number | undefined;
  addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = window.setTimeout(() => {
      for (const spec of SPECS) {
        const el = $(`#${spec.id}`);
        charts.get(spec.id)?.setSize({ width: chartWidth(el), height: 200 });
      }
    }, 100);
  });
  void follow(host);
}
