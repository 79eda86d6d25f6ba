import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { lintOpenapi } from '../../scripts/lint-openapi.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t.app.close());

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ $ref?: string; name?: string; in?: string }>;
  responses: Record<string, { content?: Record<string, unknown>; headers?: object }>;
}

async function documentOf(overrides: Parameters<typeof buildTestApp>[0] = {}) {
  t = await buildTestApp(overrides);
  await t.app.ready();
  return (await t.app.openapi()) as unknown as {
    servers: Array<{ url: string }>;
    components: { securitySchemes: Record<string, Record<string, string>> };
    paths: Record<string, Record<string, Operation>>;
  };
}

const operationsOf = (doc: Awaited<ReturnType<typeof documentOf>>) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ where: `${method} ${path}`, path, op })),
  );

const refs = (op: Operation) => (op.parameters ?? []).map((p) => p.$ref?.split('/').pop());

it('generates the OpenAPI document byte for byte as snapshotted (npm run openapi:snapshot)', async () => {
  t = await buildTestApp();
  await t.app.ready();
  const snapshot = readFileSync(new URL('./openapi.snapshot.json', import.meta.url), 'utf8');
  expect(`${JSON.stringify(await t.app.openapi(), null, 2)}\n`).toBe(snapshot);
});

describe('the document is complete', () => {
  it('passes Redocly lint (recommended, warnings as errors) with no problem', async () => {
    const doc = await documentOf();
    const result = lintOpenapi(doc, ['--format=json']);
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(result.status).toBe(0);
  }, 60_000);

  it('names its servers and a security scheme per group', async () => {
    const doc = await documentOf();
    expect(doc.servers.map((s) => s.url)).toEqual(['/', 'http://127.0.0.1:{port}']);
    expect(doc.components.securitySchemes).toMatchObject({
      bearerAuth: { type: 'http', scheme: 'bearer' },
      apiKeyAuth: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      azureApiKey: { type: 'apiKey', in: 'header', name: 'api-key' },
      adminToken: { type: 'apiKey', in: 'header', name: 'x-emulator-admin-token' },
    });
  });

  it('gives every operation an id, a tag, its security and its error responses', async () => {
    const doc = await documentOf();
    const operations = operationsOf(doc);
    const ids = operations.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const probes = ['/_emulator/health', '/_emulator/ready'];
    for (const { where, path, op } of operations) {
      expect(op.operationId, where).toMatch(/^[A-Za-z0-9]+$/);
      expect(op.tags, where).toHaveLength(1);
      expect(op.security, where).toBeDefined();
      if (!probes.includes(path)) {
        expect(
          Object.keys(op.responses).some((s) => s.startsWith('4')),
          where,
        ).toBe(true);
      }
      const security = op.security?.flatMap((s) => Object.keys(s)) ?? [];
      if (path.startsWith('/videogen/')) {
        expect(security, where).toEqual(['bearerAuth']);
        expect(op.responses['401'], where).toBeDefined();
      }
      if (path.startsWith('/v1/')) {
        expect(security, where).toEqual(['bearerAuth', 'azureApiKey']);
        expect(op.responses['401'], where).toBeDefined();
      }
      if (path.startsWith('/openai/')) {
        expect(security, where).toEqual(['azureApiKey', 'bearerAuth']);
        expect(op.responses['401'], where).toBeDefined();
      }
      if (path.startsWith('/messages-api/')) {
        expect(security, where).toEqual(['apiKeyAuth', 'bearerAuth']);
        expect(refs(op), where).toContain('MsgapiVersion');
        expect(op.responses['529'], where).toBeDefined();
        expect(op.responses['400']?.headers, where).toHaveProperty('request-id');
      }
      if (path.startsWith('/_emulator/') && !probes.includes(path)) {
        expect(security, where).toEqual(['adminToken']);
      }
      if (/^\/(videogen|messages-api|v1|openai)\//.test(path)) {
        expect(refs(op), where).toEqual(expect.arrayContaining(['Fault', 'Session']));
      }
    }
    expect(doc.paths['/_emulator/health']?.get?.security).toEqual([]);
  });

  it('documents both answers of the streaming routes: JSON and the event stream', async () => {
    const doc = await documentOf();
    for (const [path, name] of [
      ['/messages-api/v1/messages', 'MessageStreamEvent'],
      ['/v1/chat/completions', 'ChatStreamFrame'],
    ] as const) {
      const op = doc.paths[path]?.post as Operation;
      const content = op.responses['200']?.content as Record<string, { schema: unknown }>;
      expect(Object.keys(content), name).toEqual(['application/json', 'text/event-stream']);
      expect(JSON.stringify(content['text/event-stream']?.schema), name).toContain('"enum"');
      expect(refs(op), path).toContain('StreamDelay');
    }
    const messages = doc.paths['/messages-api/v1/messages']?.post as Operation;
    const events = JSON.stringify(messages.responses['200']?.content?.['text/event-stream']);
    for (const type of ['message_start', 'content_block_delta', 'message_stop', 'error']) {
      expect(events).toContain(`"${type}"`);
    }
  });
});

describe('the document states what is refused', () => {
  type Schema = { properties: Record<string, unknown> };
  const bodyOf = (op: Operation | undefined) =>
    (op as unknown as { requestBody: { content: Record<string, { schema: Schema }> } }).requestBody
      .content['application/json']?.schema as Schema;

  it('in schema keywords where one can state it (docs/control.md "OpenAPI")', async () => {
    const doc = await documentOf();
    const messages = bodyOf(doc.paths['/messages-api/v1/messages']?.post).properties;
    expect(messages.messages).toMatchObject({ type: 'array', minItems: 1 });
    const thinking = messages.thinking as { oneOf: Schema[] };
    expect(thinking.oneOf[0]?.properties.budget_tokens).toEqual({
      type: 'integer',
      minimum: 1024,
      description: 'less than max_tokens (unless thinking interleaves with tools)',
    });
    const tools = messages.tools as { items: { anyOf: Array<{ anyOf?: Schema[] }> } };
    const serverTools = tools.items.anyOf[2]?.anyOf ?? [];
    expect(serverTools.map((tool) => [tool.properties.type, tool.properties.name])).toEqual([
      [
        { type: 'string', pattern: '^web_search_\\d{8}$' },
        { type: 'string', enum: ['web_search'] },
      ],
      [
        { type: 'string', pattern: '^web_fetch_\\d{8}$' },
        { type: 'string', enum: ['web_fetch'] },
      ],
      [
        { type: 'string', pattern: '^tool_search_tool_regex(_\\d{8})?$' },
        { type: 'string', enum: ['tool_search_tool_regex'] },
      ],
      [
        { type: 'string', pattern: '^tool_search_tool_bm25(_\\d{8})?$' },
        { type: 'string', enum: ['tool_search_tool_bm25'] },
      ],
      [
        { type: 'string', pattern: '^bash_\\d{8}$' },
        { type: 'string', enum: ['bash'] },
      ],
      [
        { type: 'string', pattern: '^memory_\\d{8}$' },
        { type: 'string', enum: ['memory'] },
      ],
      [
        { type: 'string', pattern: '^computer_\\d{8}$' },
        { type: 'string', enum: ['computer'] },
      ],
      [
        { type: 'string', pattern: '^code_execution_\\d{8}$' },
        { type: 'string', enum: ['code_execution'] },
      ],
      [
        { type: 'string', pattern: expect.stringMatching(/^\^text_editor_\(/) },
        { type: 'string', enum: ['str_replace_editor'] },
      ],
      [
        { type: 'string', pattern: expect.stringMatching(/^\^text_editor_\(\?!/) },
        { type: 'string', enum: ['str_replace_based_edit_tool'] },
      ],
      [expect.objectContaining({ type: 'string' }), { type: 'string', minLength: 1 }],
    ]);
    const chat = bodyOf(doc.paths['/v1/chat/completions']?.post).properties;
    const name = { type: 'string', pattern: '^[a-zA-Z0-9_-]+$', maxLength: 64 };
    const chatTools = chat.tools as { maxItems: number; items: { oneOf: Schema[] } };
    expect(chatTools.maxItems).toBe(128);
    expect(
      chatTools.items.oneOf.map((tool) => tool.properties.function ?? tool.properties.custom),
    ).toEqual([
      expect.objectContaining({ properties: expect.objectContaining({ name }) }),
      expect.objectContaining({ properties: expect.objectContaining({ name }) }),
    ]);
    const text2video = bodyOf(doc.paths['/videogen/v1/videos/text2video']?.post).properties;
    expect(text2video.model_name).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: 64,
      not: { enum: ['vid-v2-6', 'vid-video-o1', 'vid-v3-omni'] },
      description: 'one of "vid-v3", "vid-v2-5-turbo", "vid-v1-6"',
    });
    const azure = doc.paths['/openai/deployments/{deployment}/chat/completions']?.post;
    expect(azure?.parameters?.find((p) => p.name === 'api-version')).toMatchObject({
      in: 'query',
      required: true,
      schema: { type: 'string', pattern: '^(\\d{4})-(\\d{2})-(\\d{2})(-preview)?$' },
    });
    const drift = doc.paths['/_emulator/drift']?.post as unknown as { requestBody: object };
    expect(drift.requestBody).toEqual({
      required: false,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            nullable: true,
            additionalProperties: false,
            properties: { recordings: { type: 'string', minLength: 1, maxLength: 4096 } },
          },
        },
      },
    });
    // The validators' own wording of a refusal is theirs: not in the document.
    expect(JSON.stringify(doc)).not.toContain('x-refusal');
  });

  it("in the operation's description where none can (rules across fields, or state)", async () => {
    const doc = await documentOf();
    const described = (path: string) =>
      (doc.paths[path]?.post as unknown as { description?: string } | undefined)?.description;
    expect(described('/messages-api/v1/messages')).toContain(
      '`max_tokens` must be greater than `thinking.budget_tokens`',
    );
    expect(described('/videogen/v1/videos/text2video')).toContain(
      'a `model_name` of no model: 404, code 1203',
    );
    expect(described('/openai/deployments/{deployment}/chat/completions')).toContain(
      'no real date (2024-02-30)',
    );
    expect(described('/_emulator/drift')).toContain('a directory that does not exist');
  });
});

describe('the docs UI at /_emulator/docs', () => {
  for (const adminToken of [undefined, 'letmein']) {
    it(`loads, with its assets and the document, without a token${adminToken ? ' (one is set)' : ''}`, async () => {
      t = await buildTestApp(adminToken ? { adminToken } : {});
      for (const url of ['/_emulator/docs', '/_emulator/docs/']) {
        const page = await t.inject({ url });
        expect(page.statusCode, url).toBe(200);
        expect(page.headers['content-type'], url).toMatch(/^text\/html/);
        expect(page.body, url).toContain('/static/swagger-initializer.js');
      }
      const index = await t.inject({ url: '/_emulator/docs/static/index.html' });
      expect(index.statusCode).toBe(302);
      expect(index.headers.location).toBe('/_emulator/docs/');
      const bundle = await t.inject({ url: '/_emulator/docs/static/swagger-ui-bundle.js' });
      expect(bundle.statusCode).toBe(200);
      expect(bundle.headers['content-type']).toMatch(/javascript/);
      const css = await t.inject({ url: '/_emulator/docs/static/swagger-ui.css' });
      expect(css.statusCode).toBe(200);
      const missing = await t.inject({ url: '/_emulator/docs/static/nope.js' });
      expect(missing.statusCode).toBe(404);
      expect(missing.json().error.type).toBe('not_found_error');
      const served = await t.inject({ url: '/_emulator/docs/json' });
      expect(served.statusCode).toBe(200);
      const document = await t.inject({ url: '/_emulator/openapi.json' });
      expect(document.statusCode).toBe(200);
      expect(served.json()).toEqual(document.json());
      // The rest of the control surface still needs the token.
      const clock = await t.inject({ url: '/_emulator/clock' });
      expect(clock.statusCode).toBe(adminToken ? 401 : 200);
    });
  }
});
