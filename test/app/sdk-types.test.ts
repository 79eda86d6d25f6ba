import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signThinking } from '../../src/text/agent.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import {
  type Api,
  answerFindings,
  type Coverage,
  newCoverage,
  probeRequest,
} from '../helpers/sdk-probes.js';
import {
  type LiteralSite,
  literalSites,
  loadSdkTypes,
  type TypeName,
} from '../helpers/sdk-types.js';

/**
 * The emulator against the official SDKs' own types (openai's chat completions,
 * @anthropic-ai/sdk's messages and count_tokens), read with the TypeScript compiler: every
 * string literal a request field takes is sent in the smallest request upstream accepts with
 * it, and taken; a made-up value of every closed list is refused with a 400 naming the field;
 * every answer (JSON and each stream event) carries every field the SDK's type requires, each
 * literal-typed field one the type allows. Nothing here lists values: a new SDK release brings
 * its own (`npm run check:sdk-latest` runs this against the newest, `SDK_TYPES_DIR`).
 */

const types = loadSdkTypes();

const REQUESTS: Record<Api, TypeName> = {
  chat: 'chatRequest',
  messages: 'messagesRequest',
  count_tokens: 'countTokensRequest',
};
const ANSWERS: Record<Api, { json: TypeName; event?: TypeName }> = {
  chat: { json: 'chatCompletion', event: 'chatChunk' },
  messages: { json: 'message', event: 'messageEvent' },
  count_tokens: { json: 'tokensCount' },
};

/**
 * Frames upstream sends that the SDKs' stream types leave out (their readers pass them by):
 * Azure's first chat frame, the prompt's filter results with blank identity fields
 * (`object: ""`); the messages stream's `ping` events.
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming#event-types
 */
const UNTYPED_FRAMES: Record<Api, (frame: Record<string, unknown>) => boolean> = {
  chat: (frame) => frame.object === '' && 'prompt_filter_results' in frame,
  messages: (frame) => frame.type === 'ping',
  count_tokens: () => false,
};

/**
 * Literals upstream refuses in the smallest request that carries them (none so far): each
 * with why. A request to an SDK's literal that is refused otherwise is a finding.
 */
const REFUSED_UPSTREAM: ReadonlyArray<{ api: Api; path: string; value: string; why: string }> = [];

interface Outcome {
  site: LiteralSite;
  status: number;
  body: string;
}

interface Run {
  taken: Outcome[];
  madeUp: Outcome[];
  findings: string[];
  coverage: Coverage;
}

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ logLevel: 'silent' });
});
afterAll(() => t.app.close());

const send = (api: Api, body: object) =>
  api === 'chat'
    ? t.chat(body)
    : t.messages(body, api === 'count_tokens' ? { path: '/count_tokens' } : {});

/** The field a made-up value stands in: the owner object's literal fields, tried once each. */
const fieldOf = (site: LiteralSite) =>
  JSON.stringify(site.steps.slice(0, site.steps.findLastIndex((step) => 'prop' in step) + 1));

/** Every probe of one API, sent once (the tests of that API share the run). */
async function probe(api: Api): Promise<Run> {
  const root = types.shapes[REQUESTS[api]];
  const run: Run = { taken: [], madeUp: [], findings: [], coverage: newCoverage() };
  const tried = new Set<string>();
  const seen = new Set<string>();
  const check = (type: TypeName, value: unknown, site: LiteralSite, how: string) => {
    for (const { path, problem } of answerFindings(types.shapes[type], value, run.coverage)) {
      const finding = `${how} ${path}: ${problem}`;
      if (!seen.has(finding)) {
        seen.add(finding);
        run.findings.push(`${finding} (${site.path} = ${site.value})`);
      }
    }
  };
  for (const site of literalSites(root)) {
    if (site.closed && !tried.has(fieldOf(site))) {
      tried.add(fieldOf(site));
      const res = await send(api, probeRequest(api, root, site, signThinking, 'made_up_value'));
      run.madeUp.push({ site, status: res.statusCode, body: res.body });
    }
    const body = probeRequest(api, root, site, signThinking);
    const res = await send(api, body);
    run.taken.push({ site, status: res.statusCode, body: res.body });
    if (res.statusCode !== 200) continue;
    check(ANSWERS[api].json, res.json(), site, 'JSON');
    const event = ANSWERS[api].event;
    if (!event) continue;
    const streamed = await send(api, { ...body, stream: true });
    for (const { data } of parseSse(streamed.body)) {
      if (data === '[DONE]' || UNTYPED_FRAMES[api](data as Record<string, unknown>)) continue;
      check(event, data, site, 'stream');
    }
  }
  return run;
}

const runs = new Map<Api, Promise<Run>>();
const runOf = (api: Api) => {
  let run = runs.get(api);
  if (!run) {
    run = probe(api);
    runs.set(api, run);
  }
  return run;
};

/** The segments of a field's path (`messages[].content[].type`, `tools.0.bash.name`, ...). */
const segments = (path: string) =>
  path.split(/[.[\]]+/).filter((segment) => segment !== '' && !/^\d+$/.test(segment));

/**
 * Whether an error names the field: its path holds the field's names in order (upstream's
 * paths may add a tool's type, a union's tag); a union's `type` may be named by the union.
 */
function namesField(named: string, path: string): boolean {
  const inOrder = (wanted: string[]) => {
    let at = 0;
    for (const segment of segments(named)) if (segment === wanted[at]) at++;
    return at === wanted.length;
  };
  const wanted = segments(path);
  return inOrder(wanted) || (wanted.at(-1) === 'type' && inOrder(wanted.slice(0, -1)));
}

/** The field an error names, in its group's envelope (undefined: not that envelope). */
function namedField(api: Api, body: string): string | undefined {
  const error = (JSON.parse(body) as { error?: Record<string, unknown>; type?: unknown }).error;
  if (api === 'chat') {
    return error?.type === 'invalid_request_error' && typeof error.param === 'string'
      ? error.param
      : undefined;
  }
  const parsed = JSON.parse(body) as { type?: unknown };
  return parsed.type === 'error' &&
    error?.type === 'invalid_request_error' &&
    typeof error.message === 'string'
    ? error.message.split(': ')[0]
    : undefined;
}

const report: string[] = [];
afterAll(() => {
  if (process.env.SDK_REPORT) writeFileSync(process.env.SDK_REPORT, `${report.join('\n')}\n`);
});

describe.each(['chat', 'messages', 'count_tokens'] as const)('%s against the SDK types', (api) => {
  const sites = literalSites(types.shapes[REQUESTS[api]]);

  it(`takes each of the ${sites.length} literals its request type allows`, async () => {
    const { taken } = await runOf(api);
    const refused = taken
      .filter(
        ({ site, status }) =>
          status !== 200 &&
          !REFUSED_UPSTREAM.some(
            (e) => e.api === api && e.path === site.path && e.value === site.value,
          ),
      )
      .map(({ site, status, body }) => `${site.path} = ${site.value}: ${status} ${body}`);
    report.push(`${api}: ${taken.length - refused.length} of ${taken.length} literals taken`);
    report.push(...refused.map((line) => `  refused ${line}`));
    expect(refused).toEqual([]);
  });

  it('refuses a made-up value of each closed list with a 400 naming the field', async () => {
    const { madeUp } = await runOf(api);
    const wrong = madeUp
      .filter(({ site, status, body }) => {
        const named = status === 400 ? namedField(api, body) : undefined;
        return named === undefined || !namesField(named, site.path);
      })
      .map(({ site, status, body }) => `${site.path}: ${status} ${body.slice(0, 300)}`);
    report.push(`${api}: ${madeUp.length - wrong.length} of ${madeUp.length} closed lists checked`);
    report.push(...wrong.map((line) => `  not refused ${line}`));
    expect(madeUp.length).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });

  it('answers with every field the SDK requires, each literal one it allows', async () => {
    const { findings, coverage } = await runOf(api);
    report.push(
      `${api}: answers checked on ${coverage.fields.size} fields (${coverage.literals.size} literal-typed)`,
    );
    report.push(...findings.map((line) => `  answer ${line}`));
    expect(coverage.fields.size).toBeGreaterThan(0);
    expect(findings).toEqual([]);
  });
});

it('reads the SDKs it names', () => {
  report.unshift(
    `SDK types from ${types.root}: openai ${types.versions.openai}, @anthropic-ai/sdk ${types.versions['@anthropic-ai/sdk']}`,
  );
  expect(types.versions.openai).not.toBe('missing');
  expect(types.versions['@anthropic-ai/sdk']).not.toBe('missing');
});
