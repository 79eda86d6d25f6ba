import { Ajv, type AnySchema } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { componentId, toJsonSchema } from '../../scripts/openapi-json-schema.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Every schema of the document compiles in Ajv's strict mode once converted from OpenAPI 3.0 to
 * JSON Schema as Stoplight Prism converts it (scripts/openapi-json-schema.ts). A schema that
 * does not compile there is one Prism (and tools like it) silently checks nothing against.
 */

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every schema in the document with where it is: components, parameters, bodies, headers. */
function schemasOf(document: Json): Array<{ where: string; schema: Json }> {
  const found: Array<{ where: string; schema: Json }> = [];
  const components = document.components as Json;
  for (const [name, schema] of Object.entries(components.schemas as Json)) {
    found.push({ where: `#/components/schemas/${name}`, schema: schema as Json });
  }
  const fromContent = (where: string, content: unknown) => {
    for (const [type, media] of Object.entries(isObject(content) ? content : {})) {
      if (isObject(media) && isObject(media.schema)) {
        found.push({ where: `${where} ${type}`, schema: media.schema });
      }
    }
  };
  const fromHeaders = (where: string, headers: unknown) => {
    for (const [name, header] of Object.entries(isObject(headers) ? headers : {})) {
      if (isObject(header) && isObject(header.schema)) {
        found.push({ where: `${where} header ${name}`, schema: header.schema });
      }
    }
  };
  for (const [name, parameter] of Object.entries(components.parameters as Json)) {
    found.push({
      where: `#/components/parameters/${name}`,
      schema: (parameter as Json).schema as Json,
    });
  }
  fromHeaders('#/components/headers', components.headers);
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      const op = operation as Json;
      const where = `${method.toUpperCase()} ${path}`;
      for (const parameter of (op.parameters as Json[] | undefined) ?? []) {
        if (isObject(parameter.schema)) {
          found.push({
            where: `${where} ${parameter.in} ${parameter.name}`,
            schema: parameter.schema,
          });
        }
      }
      fromContent(`${where} request`, (op.requestBody as Json | undefined)?.content);
      for (const [status, response] of Object.entries(op.responses as Json)) {
        fromContent(`${where} ${status}`, (response as Json).content);
        fromHeaders(`${where} ${status}`, (response as Json).headers);
      }
    }
  }
  return found;
}

let t: TestApp;
let document: Json;
beforeAll(async () => {
  t = await buildTestApp();
  await t.app.ready();
  document = await t.app.openapi();
});
afterAll(() => t.app.close());

it('compiles every schema of the document in Ajv strict mode, converted as Prism converts OpenAPI 3.0', () => {
  const ajv = new Ajv({ strict: true, allowUnionTypes: true, discriminator: true });
  addFormats.default(ajv);
  const components = (document.components as Json).schemas as Json;
  for (const [name, schema] of Object.entries(components)) {
    ajv.addSchema(toJsonSchema(schema) as AnySchema, componentId(name));
  }
  const schemas = schemasOf(document);
  const failures: string[] = [];
  for (const { where, schema } of schemas) {
    try {
      ajv.compile(toJsonSchema(schema) as AnySchema);
    } catch (error) {
      failures.push(`${where}: ${(error as Error).message}`);
    }
  }
  expect(failures).toEqual([]);
  // Every operation's schemas were among them.
  const operations = Object.entries(document.paths as Json).flatMap(([path, item]) =>
    Object.keys(item as Json).map((method) => `${method.toUpperCase()} ${path}`),
  );
  const checked = new Set(schemas.map(({ where }) => where.split(' ', 2).join(' ')));
  expect(operations.filter((operation) => !checked.has(operation))).toEqual([]);
  expect(operations.length).toBeGreaterThan(50);
});
