import { fieldError } from '../../platform/errors.js';
import type { OutputFormat } from '../../text/agent.js';
import {
  generationProblem,
  schemaBudget,
  schemaMemo,
  schemaProblem,
  spendSchema,
} from '../../text/json-schema.js';
import { strictProblem } from '../strict-schema.js';
import type { Request } from './request.js';

export function readOutput(body: Request): OutputFormat | undefined {
  const configured = body.output_config?.format;
  const format = configured ?? body.output_format;
  if (!format) return undefined;
  const path = configured ? ['output_config', 'format', 'schema'] : ['output_format', 'schema'];
  const over = spendSchema(schemaBudget(), format.schema);
  if (over !== undefined) throw fieldError(path, over);
  // (what structured outputs refuse first, as for a strict tool: a cycle of references is
  // said to be one before Ajv would fail on it)
  const refused = schemaMemo(format.schema, 'messages-strict', strictProblem);
  if (refused !== undefined) throw fieldError(path, refused);
  const problem = schemaProblem(format.schema);
  if (problem !== undefined) throw fieldError(path, `is not a valid JSON schema: ${problem}`);
  const unusable = generationProblem(format.schema);
  if (unusable !== undefined) throw fieldError(path, unusable);
  return { kind: 'json_schema', schema: format.schema, path };
}
