import { fieldError, GatewayError, type PathSegment } from '../../platform/errors.js';
import type { ToolChoice, ToolDef } from '../../text/agent.js';
import {
  generationProblem,
  schemaBudget,
  schemaMemo,
  schemaProblem,
  spendSchema,
} from '../../text/json-schema.js';
import type { PromptBlock } from '../../text/prompt-cache.js';
import { ToolsMemo } from '../../text/tools-memo.js';
import { TOOLSET_MEMBERS, type ToolParam, type Toolset } from '../schemas.js';
import { strictCounts, strictProblem } from '../strict-schema.js';
import {
  type Deferred,
  deferredTool,
  searchInputOfPrompt,
  TOOL_SEARCH_TYPE,
  type ToolSearch,
} from '../tool-search.js';
import { readWebFetchTool, WEB_FETCH_TYPE, type WebFetchTool } from '../web-fetch.js';
import {
  readWebSearchTool,
  searchQuery,
  WEB_SEARCH_TYPE,
  type WebSearchTool,
} from '../web-search.js';
import type { BlockReader } from './block-reader.js';
import { type Breakpoint, ttlOf } from './cache-breakpoints.js';
import type { Request } from './request.js';
import { fetchInput, WEB_FETCH_INPUT, WEB_SEARCH_INPUT } from './web-inputs.js';

const isCustom = (tool: ToolParam): tool is Extract<ToolParam, { input_schema: unknown }> =>
  'input_schema' in tool;
const isToolset = (tool: ToolParam): tool is Toolset =>
  'type' in tool && typeof tool.type === 'string' && Object.hasOwn(TOOLSET_MEMBERS, tool.type);

/** An input of one fixed value: what the emulator's call of an Anthropic-defined tool sends. */
const fixedInput = (input: Record<string, string>) => ({
  type: 'object',
  properties: Object.fromEntries(Object.entries(input).map(([k, v]) => [k, { const: v }])),
  required: Object.keys(input),
  additionalProperties: false,
});

/**
 * Anthropic-defined tools the client runs (not upstream): the model calls them like the
 * client's own tools, with inputs of their documented shapes; the emulator's calls are a
 * harmless first step of each (list, view, screenshot).
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/bash-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool
 */
const CLIENT_TOOL_INPUTS: Record<string, object> = {
  bash: fixedInput({ command: 'ls' }),
  text_editor: fixedInput({ command: 'view', path: '.' }),
  memory: fixedInput({ command: 'view', path: '/memories' }),
  computer: fixedInput({ action: 'screenshot' }),
};

const CLIENT_TOOL = /^(bash|text_editor|memory|computer)_\d{8}$/;

/** The input schema of an Anthropic-defined client tool, or undefined for a server tool's. */
const clientToolInput = (tool: ToolParam): object | undefined => {
  const kind = 'type' in tool && typeof tool.type === 'string' ? CLIENT_TOOL.exec(tool.type) : null;
  return kind ? CLIENT_TOOL_INPUTS[kind[1] as string] : undefined;
};

export interface ReadTools {
  defs: ToolDef[];
  names: ReadonlySet<string>;
  /** The tools' prompt blocks and cache breakpoints, in order. */
  blocks: PromptBlock[];
  marks: Breakpoint[];
  /** The `strict: true` tools' parameter counts (see strict-schema.ts), one per such tool. */
  strict: Array<{ optional: number; unions: number }>;
  search?: WebSearchTool;
  fetch?: WebFetchTool;
  toolSearch?: ToolSearch;
  toolSearches?: ReadonlyMap<string, ToolSearch>;
  /** Tools with `defer_loading: true`: each one's description and definition (JSON). */
  deferred: ReadonlyMap<string, Deferred>;
}

/**
 * Tools already read: an agent sends the same tools every turn, and checking them (names,
 * schemas) and writing their prompt text would otherwise be repeated. At most READ_TOOLS_KEPT
 * sets, each of at most READ_TOOLS_KEPT_BYTES of JSON.
 */
const READ_TOOLS_KEPT = 64;
const READ_TOOLS_KEPT_BYTES = 64 * 1024;
const toolsMemo = new ToolsMemo<ReadTools>(READ_TOOLS_KEPT, READ_TOOLS_KEPT_BYTES);

/** The request's tools, checked, with their prompt blocks added to the reader's. */
export function readTools(tools: readonly ToolParam[], reader: BlockReader): ReadTools {
  const read =
    tools.length > 0
      ? toolsMemo.get(tools, () => readToolsOnce(tools)).value
      : readToolsOnce(tools);
  // Copies: a block may be marked later (a top-level cache_control).
  for (const block of read.blocks) reader.blocks.push({ ...block });
  reader.marks.push(...read.marks);
  return { ...read, defs: [...read.defs] };
}

/** What reading the tools collects, one tool at a time. */
interface ToolsRead {
  defs: ToolDef[];
  names: Set<string>;
  blocks: PromptBlock[];
  marks: Breakpoint[];
  strict: ReadTools['strict'];
  search?: WebSearchTool;
  fetch?: WebFetchTool;
  toolSearch?: ToolSearch;
  toolSearches: Map<string, ToolSearch>;
  deferred: Map<string, Deferred>;
}

type CustomTool = Extract<ToolParam, { input_schema: unknown }>;
type DefinedTool = Extract<Exclude<ToolParam, CustomTool>, { name: string }>;

function readToolsOnce(tools: readonly ToolParam[]): ReadTools {
  // Every schema counted before any is compiled: a request over the budget costs no compiling.
  const budget = schemaBudget();
  tools.forEach((tool, i) => {
    if (!isCustom(tool)) return;
    const over = spendSchema(budget, tool.input_schema);
    if (over !== undefined) throw fieldError(['tools', i, 'custom', 'input_schema'], over);
  });
  const read: ToolsRead = {
    defs: [],
    names: new Set(),
    blocks: [],
    marks: [],
    strict: [],
    toolSearches: new Map(),
    deferred: new Map(),
  };
  tools.forEach((tool, i) => {
    readTool(read, tools, tool, i);
  });
  const { defs, names, blocks, marks, strict, search, fetch, toolSearch, toolSearches, deferred } =
    read;
  if (deferred.size > 0 && deferred.size === tools.length) {
    throw new GatewayError(
      400,
      'At least one tool must have defer_loading=false. All tools cannot be deferred.',
    );
  }
  return {
    defs,
    names,
    blocks,
    marks,
    strict,
    ...(search ? { search } : {}),
    ...(fetch ? { fetch } : {}),
    ...(toolSearch ? { toolSearch, toolSearches } : {}),
    deferred,
  };
}

/** One tool: checked, its call's input schema, its prompt block (unless deferred). */
function readTool(read: ToolsRead, tools: readonly ToolParam[], tool: ToolParam, i: number) {
  const { cache_control, ...definition } = tool;
  const ttl = ttlOf(cache_control);
  if (isToolset(tool)) {
    // One definition for its members (the emulator never calls them), named by its family.
    const family = tool.type.replace(/_toolset_\d{8}$/, '');
    if (read.names.has(family)) throw fieldError(['tools'], 'Tool names must be unique.');
    read.names.add(family);
    read.blocks.push({ text: JSON.stringify(definition), ...(ttl ? { cache: ttl } : {}) });
    if (ttl) read.marks.push({ path: ['tools', i, 'cache_control'], ttl });
    return;
  }
  if (isCustom(tool)) readCustomTool(read, tool, i);
  else readDefinedTool(read, tools, tool, i);
  if (read.names.has(tool.name)) throw fieldError(['tools'], 'Tool names must be unique.');
  read.names.add(tool.name);
  if ((tool as { defer_loading?: unknown }).defer_loading === true) {
    // Not in the prompt until a search finds it (its definition is read in then).
    const description =
      'description' in tool && typeof tool.description === 'string' ? tool.description : '';
    read.deferred.set(tool.name, deferredTool(tool.name, description, JSON.stringify(definition)));
    const def = read.defs.at(-1);
    if (def?.name === tool.name) def.deferred = true;
    return;
  }
  read.blocks.push({ text: JSON.stringify(definition), ...(ttl ? { cache: ttl } : {}) });
  if (ttl) read.marks.push({ path: ['tools', i, 'cache_control'], ttl });
}

/** A client's own tool: its name, and an input schema the emulator can generate calls of. */
function readCustomTool(read: ToolsRead, tool: CustomTool, i: number): void {
  // (its name's pattern is the schema's: schemas/tools.ts CUSTOM_TOOL_NAME)
  const path = ['tools', i, 'custom', 'input_schema'];
  const schema = tool.input_schema as Record<string, unknown>;
  if ('anyOf' in schema || 'oneOf' in schema || 'allOf' in schema) {
    throw fieldError(path, 'input_schema does not support oneOf, allOf, or anyOf at the top level');
  }
  if (tool.strict === true) {
    const problem = schemaMemo(schema, 'messages-strict', strictProblem);
    if (problem !== undefined) throw fieldError(['tools', i, 'custom'], problem);
    read.strict.push(schemaMemo(schema, 'messages-strict-counts', strictCounts));
  }
  if (schemaProblem(tool.input_schema) !== undefined) {
    throw fieldError(
      path,
      'JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12).',
    );
  }
  const unusable = generationProblem(tool.input_schema);
  if (unusable !== undefined) throw fieldError(path, unusable);
  read.defs.push({ name: tool.name, schema: tool.input_schema, path });
}

/** An Anthropic-defined tool: its name and callers, and how the emulator calls it. */
function readDefinedTool(
  read: ToolsRead,
  tools: readonly ToolParam[],
  tool: DefinedTool,
  i: number,
): void {
  if (typeof tool.name !== 'string') {
    throw fieldError(['tools', i, tool.type, 'name'], 'Field required');
  }
  // (the fixed names and `allowed_callers` are the schema's: schemas/tools.ts ServerToolSchema)
  if (WEB_SEARCH_TYPE.test(tool.type)) {
    read.search = readWebSearchTool(tool, i);
    read.defs.push({
      name: tool.name,
      schema: WEB_SEARCH_INPUT,
      path: ['tools', i],
      inputOf: (turn) => ({ query: searchQuery(turn.prompt) }),
    });
  } else if (TOOL_SEARCH_TYPE.test(tool.type)) {
    readToolSearchTool(read, tool, i);
  } else if (WEB_FETCH_TYPE.test(tool.type)) {
    const declared = new Set(
      tools.flatMap((t) => ('name' in t && typeof t.name === 'string' ? [t.name] : [])),
    );
    read.fetch = readWebFetchTool(tool, i, declared);
    read.defs.push({
      name: tool.name,
      schema: WEB_FETCH_INPUT,
      path: ['tools', i],
      inputOf: fetchInput,
    });
  } else {
    const input = clientToolInput(tool);
    if (input) read.defs.push({ name: tool.name, schema: input, path: ['tools', i] });
  }
}

/** A tool search tool: named by its kind, called when asked for. */
function readToolSearchTool(read: ToolsRead, tool: DefinedTool, i: number): void {
  const kind = (TOOL_SEARCH_TYPE.exec(tool.type) as RegExpExecArray)[1] as ToolSearch['kind'];
  const name = `tool_search_tool_${kind}`;
  if (tool.name !== name) {
    throw fieldError(['tools', i, tool.type, 'name'], `Input should be '${name}'`);
  }
  const search: ToolSearch = { name, kind };
  read.toolSearches.set(name, search);
  read.toolSearch ??= search;
  // Called when asked for (named in the user text, or forced) with the text's words.
  read.defs.push({
    name,
    schema: TOOL_SEARCH_INPUT,
    path: ['tools', i],
    inputOf: (turn) =>
      turn.prompt.toLowerCase().includes(name) ||
      (turn.choice.mode === 'named' && turn.choice.name === name)
        ? searchInputOfPrompt(search, turn.prompt)
        : undefined,
  });
}

/** What the model sends a tool search tool (its pattern or query, and a limit). */
const TOOL_SEARCH_INPUT = { type: 'object' };

export function readChoice(body: Request, names: ReadonlySet<string>): ToolChoice {
  const choice = body.tool_choice;
  const hasTools = names.size > 0;
  if (!choice) return { mode: hasTools ? 'auto' : 'none', parallel: true };
  if (choice.type === 'none') return { mode: 'none', parallel: true };
  const parallel = choice.disable_parallel_tool_use !== true;
  if (!hasTools && choice.type !== 'auto') {
    throw fieldError(['tool_choice', 'type'], `"${choice.type}" requires tools to be provided`);
  }
  if (choice.type === 'tool') {
    if (!names.has(choice.name)) {
      throw fieldError(['tool_choice', 'name'], `Tool '${choice.name}' not found in tools`);
    }
    return { mode: 'named', name: choice.name, parallel };
  }
  return { mode: choice.type, parallel };
}

/** Tools a search found earlier in the conversation, and how a found one is read in. */
export interface ToolReferences {
  discovered: Set<string>;
  reference: (name: unknown, at: PathSegment[]) => void;
}

/**
 * Tools a search found earlier in the conversation: their definitions are read in where the
 * search (or a client's tool result) named them.
 */
export function toolReferences(tools: ReadTools, reader: BlockReader): ToolReferences {
  const discovered = new Set<string>();
  const reference = (name: unknown, at: PathSegment[]) => {
    if (typeof name !== 'string' || !tools.names.has(name)) {
      throw fieldError(
        at,
        `Tool reference '${String(name).slice(0, 200)}' not found in available tools`,
      );
    }
    // (before a compaction block, dropped with it: found again after)
    if (reader.dropping) return;
    discovered.add(name);
    const definition = tools.deferred.get(name);
    if (definition) reader.text(definition.json, at);
  };
  return { discovered, reference };
}
