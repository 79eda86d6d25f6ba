import { DOCS } from './docs.js';
import { IMAGES } from './images.js';
import type { LiteralSite, ObjectShape, Shape } from './sdk-types.js';

/**
 * From a literal an SDK's request type allows to the smallest request that carries it, and
 * from an answer to what in it the SDK's answer types do not allow.
 *
 * A request is the type's required fields (sample values by field name), the path to the
 * literal, then what upstream needs around it: a tool result after its call, a forced tool
 * among the tools, a thinking budget under `max_tokens`, ... (`placeChat`, `placeMessages`).
 */

type Json = Record<string, unknown>;

/** Sample values for fields a bare `"x"` or `1` would not do for. */
const STRINGS: Record<string, string> = {
  text: 'Hi',
  id: 'toolu_01',
  tool_use_id: 'toolu_01',
  tool_call_id: 'call_1',
  name: 'get_weather',
  url: 'https://example.com/page',
  source: 'https://example.com/page',
  title: 'A page',
  arguments: '{}',
  cited_text: 'Hi',
  encrypted_index: 'AAAA',
  encrypted_content: 'AAAA',
  encrypted_stdout: 'AAAA',
  signature: 'sig',
  file_id: 'file_01',
  skill_id: 'xlsx',
  definition: 'start: "yes"',
  voice: 'alloy',
  data: 'Hi',
  tool_name: 'get_weather',
  download_id: 'dl_1',
  tab_id: 'tab_1',
};
const NUMBERS: Record<string, number> = {
  max_tokens: 64,
  budget_tokens: 1024,
  document_index: 0,
  search_result_index: 0,
  start_char_index: 0,
  end_char_index: 2,
  start_page_number: 1,
  end_page_number: 2,
  start_block_index: 0,
  end_block_index: 1,
  return_code: 0,
};
const MEDIA: Record<string, string> = {
  'image/jpeg': IMAGES.jpeg640x360,
  'image/png': IMAGES.png320,
  'image/gif': IMAGES.gif,
  'image/webp': IMAGES.webpLossy,
  'application/pdf': DOCS.twoPages,
  'text/plain': 'Hi there.',
};

/** A PDF as a data URL, and a few bytes of audio. */
const PDF_URL = `data:application/pdf;base64,${DOCS.twoPages}`;
const AUDIO = Buffer.from('RIFF....WAVEfmt ').toString('base64');

const RANK: Record<Shape['kind'], number> = {
  string: 0,
  literal: 1,
  number: 2,
  boolean: 3,
  object: 4,
  array: 5,
  union: 6,
  unknown: 7,
  null: 8,
};

/** The simplest value of a shape: required fields only, a string before an array. */
export function minimal(shape: Shape, key = '', depth = 0): unknown {
  switch (shape.kind) {
    case 'literal':
      return shape.value;
    case 'string':
      return STRINGS[key] ?? 'x';
    case 'number':
      return NUMBERS[key] ?? 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'unknown':
      return key === 'schema' || key === 'parameters' ? { type: 'object', properties: {} } : {};
    case 'array':
      return depth > 6 ? [] : [minimal(shape.items, key, depth + 1)];
    case 'union': {
      const [first] = [...shape.members].sort((a, b) => RANK[a.kind] - RANK[b.kind]);
      return first ? minimal(first, key, depth) : null;
    }
    case 'object':
      return minimalObject(shape, depth);
  }
}

function minimalObject(shape: ObjectShape, depth: number, keep?: string): Json {
  const out: Json = {};
  for (const [name, prop] of shape.props) {
    if (name === keep) out[name] = undefined;
    else if (!prop.optional) out[name] = minimal(prop.shape, name, depth + 1);
  }
  return out;
}

/**
 * The simplest value of a shape with the literal of `site` where its path leads (or `value`
 * there instead: a made-up one).
 */
export function witness(root: Shape, site: LiteralSite, value: string = site.value): Json {
  const build = (shape: Shape, at: number, key: string): unknown => {
    const step = site.steps[at];
    if (!step) return value;
    if ('member' in step && shape.kind === 'union') {
      return build(shape.members[step.member] as Shape, at + 1, key);
    }
    if ('item' in step && shape.kind === 'array') return [build(shape.items, at + 1, key)];
    if ('prop' in step && shape.kind === 'object') {
      const prop = step.prop === '*' ? shape.index : shape.props.get(step.prop)?.shape;
      if (!prop) throw new Error(`${site.path}: no ${step.prop}`);
      const name = step.prop === '*' ? 'key' : step.prop;
      const out = minimalObject(shape, at, name);
      out[name] = build(prop, at + 1, name);
      return out;
    }
    throw new Error(`${site.path}: the path does not fit the type at step ${at}`);
  };
  return fillMedia(build(root, 0, '')) as Json;
}

/** Base64 data that is a file of the media type beside it. */
function fillMedia(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fillMedia);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) out[key] = fillMedia(inner);
  const media = typeof out.media_type === 'string' ? MEDIA[out.media_type] : undefined;
  if (media !== undefined && 'data' in out) out.data = media;
  return out;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const blocksOf = (message: Json): Json[] =>
  Array.isArray(message.content) ? (message.content as Json[]) : [];

/**
 * Chat: a tool message answers an assistant's call, an assistant's calls are answered, a forced
 * tool is among the tools, a format names a schema, the model fits the feature.
 */
export function placeChat(body: Json): Json {
  const out: Json = { ...body };
  const messages: Json[] = [];
  for (const sent of (body.messages as Json[]) ?? []) {
    const message: Json = { ...sent, content: chatParts(sent.content) };
    const role = message.role;
    if (role === 'assistant' && message.content === undefined && !message.tool_calls) {
      message.content = 'Hello.';
    }
    if (role === 'tool') {
      messages.push(
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: message.tool_call_id,
              type: 'function',
              function: { name: 'get_weather', arguments: '{}' },
            },
          ],
        },
        message,
      );
    } else if (role === 'function') {
      messages.push(
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: null,
          function_call: { name: message.name, arguments: '{}' },
        },
        message,
      );
    } else if (role === 'assistant') {
      messages.push({ role: 'user', content: 'Hi' }, message);
      for (const call of (message.tool_calls as Json[] | undefined) ?? []) {
        messages.push({ role: 'tool', tool_call_id: call.id, content: 'Sunny' });
      }
    } else if (role === 'system' || role === 'developer') {
      messages.push(message, { role: 'user', content: 'Hi' });
    } else messages.push(message);
  }
  out.messages = messages;
  const choice = body.tool_choice;
  if (choice !== undefined && body.tools === undefined) {
    const custom = isObject(choice) && choice.type === 'custom';
    out.tools = [
      custom
        ? { type: 'custom', custom: { name: 'get_weather' } }
        : { type: 'function', function: { name: 'get_weather', parameters: {} } },
    ];
  }
  if (isObject(choice) && choice.type === 'allowed_tools') {
    out.tool_choice = {
      ...choice,
      allowed_tools: {
        ...(choice.allowed_tools as Json),
        tools: [{ type: 'function', function: { name: 'get_weather' } }],
      },
    };
  }
  if (body.function_call !== undefined && body.functions === undefined) {
    out.functions = [{ name: 'get_weather', parameters: {} }];
  }
  const format = body.response_format;
  // (upstream's condition for JSON mode)
  if (isObject(format) && format.type === 'json_object') {
    messages.push({ role: 'user', content: 'Answer in JSON.' });
  }
  if (isObject(format) && format.type === 'json_schema') {
    out.response_format = {
      type: 'json_schema',
      json_schema: { name: 'answer', schema: { type: 'object', properties: {} } },
    };
  }
  // Features upstream has on some models only.
  if (body.audio !== undefined || (body.modalities as string[] | undefined)?.includes('audio')) {
    out.model = 'gpt-4o-audio-preview';
    out.modalities = ['text', 'audio'];
    out.audio = { voice: 'alloy', format: 'wav', ...(body.audio as Json | undefined) };
  }
  if (body.web_search_options !== undefined) out.model = 'gpt-4o-search-preview';
  if (body.prediction !== undefined) out.model = 'gpt-4.1';
  return out;
}

/** A user's parts with what upstream needs of them: audio that is audio, a file's data. */
function chatParts(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return (content as Json[]).map((part) => {
    if (part.type === 'input_audio' && isObject(part.input_audio)) {
      return { ...part, input_audio: { ...part.input_audio, data: AUDIO } };
    }
    if (part.type === 'file' && isObject(part.file) && part.file.file_id === undefined) {
      return { ...part, file: { ...part.file, file_data: PDF_URL } };
    }
    return part;
  });
}

/** Blocks of an assistant turn (a reply sent back); the others are a user's. */
const ASSISTANT_BLOCKS = new Set([
  'thinking',
  'redacted_thinking',
  'tool_use',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
]);

/** The server tool whose call a server tool result answers, and a result of each call. */
const SERVER_CALLS: Record<string, string> = {
  web_search_tool_result: 'web_search',
  web_fetch_tool_result: 'web_fetch',
  code_execution_tool_result: 'code_execution',
  bash_code_execution_tool_result: 'bash_code_execution',
  text_editor_code_execution_tool_result: 'text_editor_code_execution',
  tool_search_tool_result: 'tool_search_tool_regex',
};
const SERVER_RESULTS: Record<string, (id: unknown) => Json> = {
  web_search: (id) => ({ type: 'web_search_tool_result', tool_use_id: id, content: [] }),
  web_fetch: (id) => ({
    type: 'web_fetch_tool_result',
    tool_use_id: id,
    content: { type: 'web_fetch_tool_result_error', error_code: 'unavailable' },
  }),
  code_execution: (id) => ({
    type: 'code_execution_tool_result',
    tool_use_id: id,
    content: { type: 'code_execution_tool_result_error', error_code: 'unavailable' },
  }),
  bash_code_execution: (id) => ({
    type: 'bash_code_execution_tool_result',
    tool_use_id: id,
    content: { type: 'bash_code_execution_tool_result_error', error_code: 'unavailable' },
  }),
  text_editor_code_execution: (id) => ({
    type: 'text_editor_code_execution_tool_result',
    tool_use_id: id,
    content: { type: 'text_editor_code_execution_tool_result_error', error_code: 'unavailable' },
  }),
  tool_search_tool_regex: (id) => ({
    type: 'tool_search_tool_result',
    tool_use_id: id,
    content: { type: 'tool_search_tool_result_error', error_code: 'unavailable' },
  }),
};
SERVER_RESULTS.tool_search_tool_bm25 = SERVER_RESULTS.tool_search_tool_regex as (
  id: unknown,
) => Json;

/**
 * Messages: a block goes in the turn upstream takes it in (a reply's blocks in an assistant
 * turn after a user's, answered by a user turn), a tool call is answered by its result, a
 * result follows its call, thinking is signed, a forced tool is among the tools, thinking's
 * budget is under `max_tokens`.
 */
export function placeMessages(body: Json, sign: (thinking: string) => string): Json {
  const out: Json = { ...body };
  const messages: Json[] = [];
  let tools = false;
  for (const message of (body.messages as Json[]) ?? []) {
    const blocks = blocksOf(message);
    const assistant =
      message.role === 'assistant' ||
      blocks.some(
        (block) =>
          ASSISTANT_BLOCKS.has(block.type as string) ||
          (block.type === 'text' && block.citations != null),
      );
    if (blocks.some((block) => block.type === 'tool_result')) {
      tools = true;
      messages.push(
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: {} }],
        },
        message,
      );
    } else if (assistant) {
      const content: Json[] = [];
      for (const block of blocks) {
        const call = SERVER_CALLS[block.type as string];
        if (call !== undefined) {
          content.push({ type: 'server_tool_use', id: block.tool_use_id, name: call, input: {} });
        }
        content.push(
          block.type === 'thinking' ? { ...block, signature: sign(String(block.thinking)) } : block,
        );
        const result = block.type === 'server_tool_use' && SERVER_RESULTS[block.name as string];
        if (result) content.push(result(block.id));
      }
      if (blocks.some((block) => block.type === 'thinking' || block.type === 'redacted_thinking')) {
        content.push({ type: 'text', text: 'Hello.' });
      }
      const calls = blocks.filter((block) => block.type === 'tool_use');
      if (calls.length > 0) tools = true;
      messages.push(
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: Array.isArray(message.content) ? content : message.content },
        calls.length > 0
          ? {
              role: 'user',
              content: calls.map((call) => ({
                type: 'tool_result',
                tool_use_id: call.id,
                content: 'Sunny',
              })),
            }
          : { role: 'user', content: 'Go on.' },
      );
    } else if (message.role === 'system') {
      // (mid-conversation system messages: on the models that take them)
      out.model = 'claude-opus-4-8';
      messages.push({ role: 'user', content: 'Hi' }, message);
    } else messages.push(message);
  }
  out.messages = messages;
  const choice = body.tool_choice as Json | undefined;
  if ((tools || (choice !== undefined && choice.type !== 'none')) && body.tools === undefined) {
    out.tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }];
  }
  // (a fetch tool's `url_sources` names tools of the request)
  if (Array.isArray(out.tools) && JSON.stringify(out.tools).includes('"tool_reference"')) {
    out.tools = [
      ...(out.tools as Json[]),
      { name: 'get_weather', input_schema: { type: 'object', properties: {} } },
    ];
  }
  const thinking = body.thinking as Json | undefined;
  if (thinking?.type === 'enabled' && typeof out.max_tokens === 'number') {
    out.max_tokens = 2048;
  }
  const format = (body.output_config as Json | undefined)?.format as Json | undefined;
  if (format?.type === 'json_schema') {
    out.output_config = {
      ...(body.output_config as Json),
      format: {
        type: 'json_schema',
        schema: { type: 'object', properties: {}, additionalProperties: false },
      },
    };
  }
  return out;
}

export type Api = 'chat' | 'messages' | 'count_tokens';

/**
 * The models requests are made for, unless the literal is one: ones that take every feature
 * the probes use (reasoning effort; manual and adaptive thinking, effort).
 */
const MODELS: Record<Api, string> = {
  chat: 'gpt-5.4',
  messages: 'claude-sonnet-4-6',
  count_tokens: 'claude-sonnet-4-6',
};

/**
 * The smallest request of `api` with the literal of `site` (or `value` there instead), placed
 * as upstream needs it.
 */
export function probeRequest(
  api: Api,
  root: Shape,
  site: LiteralSite,
  sign: (thinking: string) => string,
  value: string = site.value,
): Json {
  const body = witness(root, site, value);
  const model = site.path === 'model' ? body.model : MODELS[api];
  return api === 'chat' ? placeChat({ ...body, model }) : placeMessages({ ...body, model }, sign);
}

/** One way an answer differs from the SDK's type of it. */
export interface Finding {
  /** `choices[].message.refusal`, ... (indexes left out). */
  path: string;
  problem: string;
}

/** What the checks looked at: every field path and literal-typed field met. */
export interface Coverage {
  fields: Set<string>;
  literals: Set<string>;
}

export const newCoverage = (): Coverage => ({ fields: new Set(), literals: new Set() });

const literalsOf = (shape: Shape): Array<string | number | boolean> | undefined => {
  if (shape.kind === 'literal') return [shape.value];
  if (shape.kind !== 'union') return undefined;
  const values: Array<string | number | boolean> = [];
  for (const member of shape.members) {
    if (member.kind === 'literal') values.push(member.value);
    else if (member.kind !== 'null') return undefined;
  }
  return values;
};

/**
 * Where an answer differs from the SDK's type of it: a field the type requires missing, a
 * literal-typed field with a value the type does not list, a value of another kind. Fields
 * the type does not know are let be (upstream's own additions, Azure's filter results).
 */
export function answerFindings(
  shape: Shape,
  value: unknown,
  coverage: Coverage,
  path = '',
): Finding[] {
  const closed = literalsOf(shape);
  if (closed) {
    coverage.literals.add(path);
    if (value === null && shape.kind === 'union' && shape.members.some((m) => m.kind === 'null')) {
      return [];
    }
    return closed.includes(value as string)
      ? []
      : [{ path, problem: `${JSON.stringify(value)} is not one of ${closed.join(', ')}` }];
  }
  switch (shape.kind) {
    case 'unknown':
      return [];
    case 'string':
    case 'number':
    case 'boolean':
      return typeof value === shape.kind
        ? []
        : [{ path, problem: `${JSON.stringify(value)} is no ${shape.kind}` }];
    case 'null':
      return value === null ? [] : [{ path, problem: `${JSON.stringify(value)} is not null` }];
    case 'array':
      if (!Array.isArray(value)) return [{ path, problem: 'is no array' }];
      return value.flatMap((item) => answerFindings(shape.items, item, coverage, `${path}[]`));
    case 'object': {
      if (!isObject(value)) return [{ path, problem: `${JSON.stringify(value)} is no object` }];
      const findings: Finding[] = [];
      for (const [name, prop] of shape.props) {
        const at = path === '' ? name : `${path}.${name}`;
        coverage.fields.add(at);
        if (!(name in value)) {
          if (!prop.optional) findings.push({ path: at, problem: 'missing (the SDK requires it)' });
          continue;
        }
        findings.push(...answerFindings(prop.shape, value[name], coverage, at));
      }
      return findings;
    }
    case 'union': {
      // The members the value's own literal fields (`type`, ...) point to, else all.
      const fits = shape.members.filter((member) => {
        if (member.kind !== 'object' || !isObject(value)) return true;
        return [...member.props].every(([name, prop]) => {
          const closed = literalsOf(prop.shape);
          return !closed || !(name in value) || closed.includes(value[name] as string);
        });
      });
      const tried = (fits.length > 0 ? fits : shape.members).map((member) =>
        answerFindings(member, value, coverage, path),
      );
      if (tried.some((findings) => findings.length === 0)) return [];
      if (fits.length === 0 && isObject(value) && 'type' in value) {
        return [
          { path: `${path}.type`, problem: `${JSON.stringify(value.type)} is no known type` },
        ];
      }
      return tried.sort((a, b) => a.length - b.length)[0] ?? [];
    }
    default:
      return [];
  }
}
