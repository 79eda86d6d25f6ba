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
