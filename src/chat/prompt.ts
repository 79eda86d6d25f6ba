import { fieldError, GatewayError, type PathSegment } from '../platform/errors.js';
import { decodeBase64 } from '../platform/image.js';
import { countTokens } from '../platform/tokens.js';
import {
  type CustomFormat,
  type OutputFormat,
  type ToolChoice,
  type ToolDef,
  type ToolResult,
  type Turn,
  wholeMatch,
} from '../text/agent.js';
import {
  type Budget,
  generationBudget,
  generationProblem,
  schemaBudget,
  schemaMemo,
  schemaProblem,
  spendSchema,
} from '../text/json-schema.js';
import { LarkError, parseLark } from '../text/lark.js';
import { decodeImage, PDF_PAGE_TOKENS, parseDataUrl, pdfPages } from '../text/media.js';
import {
  defaultEffortOf,
  isReasoningModel,
  lastTokenIdOf,
  limitsOf,
  reasoningEffortsOf,
  seesImages,
} from '../text/models.js';
import type { ChatPromptPart } from '../text/prompt-cache.js';
import { replyPrompt } from '../text/replies.js';
import { ToolsMemo } from '../text/tools-memo.js';
import type {
  ChatCompletionRequest,
  ChatMessage,
  CustomTool,
  FunctionDefinition,
} from './schemas.js';
import { strictSchemaProblem } from './strict-schema.js';

/**
 * Reads a chat completions request in one pass: upstream's rules beyond the JSON schema (each a
 * 400 naming its `param`, in upstream's words where they are known), the prompt as the token
 * counter and the cache see it, and the turn the reply engine answers.
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://platform.openai.com/docs/guides/function-calling
 * @see https://platform.openai.com/docs/guides/structured-outputs
 * @see https://platform.openai.com/docs/guides/images-vision
 */

/** Token cost of each message's role framing, and of priming the reply (docs/token-counter.md). */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const TOKENS_REPLY_PRIMING = 3;
/** An image the emulator cannot see (an https URL) counts as a 1024×1024 one. */
export const UNSEEN_IMAGE_SIDE = 1024;
/** Audio input: one token per this many bytes (about 10 tokens a second of 16 kHz 16-bit audio). */
export const AUDIO_BYTES_PER_TOKEN = 3200;

export interface ChatPrompt {
  parts: ChatPromptPart[];
  promptTokens: number;
  /** The tokens each choice may have: the request's limit, else the model's (or what the window leaves). */
  maxTokens: number;
  audioTokens: number;
  turn: Turn;
  /** Legacy `functions`: a call is answered as `function_call`, not `tool_calls`. */
  legacy: boolean;
  /** The effort it reasons with: the request's `reasoning_effort`, else its model's default. */
  effort: string;
}

/** A refusal in upstream's exact words, with its `param` and `code`. */
const refuse = (message: string, param: string | null, code: string | null = null) =>
  new GatewayError(400, message, { extra: { param, code } });

/** `messages[0].content` style, as upstream names parameters in messages. */
const bracket = (path: PathSegment[]) =>
  path.reduce<string>(
    (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg),
    '',
  );

/** Upstream's tile formula: fit in 2048×2048, shortest side to 768, 170 per 512-px tile + 85. */
export function imageTokens(width: number, height: number, detail: string | undefined): number {
  if (detail === 'low') return 85;
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shortest = Math.min(1, 768 / Math.min(w, h));
  w *= shortest;
  h *= shortest;
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

export function messageText(message: ChatMessage): string {
  const { content } = message;
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content
    .map((part) => (part.type === 'text' ? part.text : part.type === 'refusal' ? part.refusal : ''))
    .filter((t) => t !== '')
    .join('\n');
}

const EMPTY_PARAMETERS = { type: 'object', properties: {} };

/**
 * A function's arguments are a JSON object: parameters of another `type` are refused in
 * upstream's words; parameters without one are read as an object's (`{}`: no parameters).
 * @see https://platform.openai.com/docs/guides/function-calling
 */
function objectParameters(raw: object): { schema: object; problem?: string } {
  const { type } = raw as { type?: unknown };
  if (type === undefined) {
    return {
      schema: Object.keys(raw).length === 0 ? EMPTY_PARAMETERS : { type: 'object', ...raw },
    };
  }
  if (type === 'object' || (Array.isArray(type) && type.includes('object'))) return { schema: raw };
  const got = Array.isArray(type) ? type.join(', ') : String(type);
  return {
    schema: raw,
    problem: `schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`,
  };
}

/** Why a function's parameters are refused, as upstream words it. */
const refuseParameters = (fn: FunctionDefinition, path: PathSegment[], problem: string) =>
  refuse(
    `Invalid schema for function '${fn.name}': ${problem}`,
    bracket([...path, 'parameters']),
    'invalid_function_parameters',
  );

/**
 * A function's name and parameters, counted against the request's schema budget. Every
 * function of a request is counted before any is compiled: a request over the budget costs
 * no compiling at all.
 */
function countFunction(fn: FunctionDefinition, path: PathSegment[], budget: Budget): object {
  const { schema, problem: notObject } = objectParameters(fn.parameters ?? EMPTY_PARAMETERS);
  const problem = notObject ?? spendSchema(budget, schema);
  if (problem !== undefined) throw refuseParameters(fn, path, problem);
  return schema;
}

/** A counted function's parameters, checked as strict mode and Ajv require. */
function readFunction(fn: FunctionDefinition, path: PathSegment[], schema: object): ToolDef {
  const problem =
    (fn.strict === true ? schemaMemo(schema, 'strict', strictSchemaProblem) : undefined) ??
    schemaProblem(schema) ??
    generationProblem(schema);
  if (problem !== undefined) throw refuseParameters(fn, path, problem);
  return { name: fn.name, schema, path: [...path, 'parameters'] };
}

/** Functions counted, then read (see countFunction); custom tools read as they come. */
function readFunctions(
  fns: ReadonlyArray<FunctionDefinition | CustomTool>,
  at: (i: number) => PathSegment[],
): ToolDef[] {
  const budget = schemaBudget();
  const schemas = fns.map((fn, i) =>
    'custom' in fn ? undefined : countFunction(fn, at(i), budget),
  );
  return fns.map((fn, i) =>
    'custom' in fn ? readCustom(fn, at(i)) : readFunction(fn, at(i), schemas[i] as object),
  );
}

/**
 * A custom tool: its name, and its format (free text, or a grammar the emulator can derive a
 * text from: a regex RE2 runs, a Lark grammar of the subset lark.ts reads).
 * @see https://platform.openai.com/docs/guides/function-calling#custom-tools
 */
function readCustom(tool: CustomTool, path: PathSegment[]): ToolDef {
  const { name, format } = tool.custom;
  const def = (custom: CustomFormat): ToolDef => ({
    name,
    schema: { type: 'string' },
    path: [...path, 'custom'],
    custom,
  });
  if (format === undefined || format.type === 'text') return def({ kind: 'text' });
  const { definition, syntax } = format.grammar;
  const param = bracket([...path, 'custom', 'format', 'grammar', 'definition']);
  const invalid = (problem: string) =>
    refuse(`Invalid grammar for custom tool '${name}': ${problem}`, param, 'invalid_value');
  if (syntax === 'regex') {
    // (checked as sent, so that a refusal quotes the client's pattern, then as it is used)
    const problem =
      generationProblem({ type: 'string', pattern: definition }) ??
      generationProblem(wholeMatch(definition));
    if (problem !== undefined) throw invalid(problem);
    return def({ kind: 'regex', pattern: definition });
  }
  try {
    return def({ kind: 'lark', grammar: parseLark(definition) });
  } catch (err) {
    if (err instanceof LarkError) throw invalid(err.message);
    throw err;
  }
}

interface ReadTools {
  tools: ToolDef[];
  legacy: boolean;
}

/**
 * Tool definitions already read (names, schemas checked), with their JSON, which the prompt
 * needs: an agent sends the same tools every turn. At most READ_TOOLS_KEPT sets of each kind,
 * each of at most READ_TOOLS_KEPT_BYTES of JSON.
 */
const READ_TOOLS_KEPT = 64;
const READ_TOOLS_KEPT_BYTES = 64 * 1024;
const toolsMemo = new ToolsMemo<ReadTools>(READ_TOOLS_KEPT, READ_TOOLS_KEPT_BYTES);
const functionsMemo = new ToolsMemo<ReadTools>(READ_TOOLS_KEPT, READ_TOOLS_KEPT_BYTES);

/** The request's tools (or legacy functions), checked, and their JSON ('' when none). */
function readTools(body: ChatCompletionRequest): ReadTools & { json: string } {
  const definitions = body.tools ?? body.functions;
  if (!definitions) return { tools: [], legacy: false, json: '' };
  const memo = body.tools ? toolsMemo : functionsMemo;
  const { json, value } = memo.get(definitions, () => readToolsOnce(body));
  // The list is the caller's to narrow (allowed_tools); the definitions are shared.
  return { tools: [...value.tools], legacy: value.legacy, json };
}

function readToolsOnce(body: ChatCompletionRequest): ReadTools {
  if (body.tools) {
    return {
      tools: readFunctions(
        body.tools.map((tool) => (tool.type === 'custom' ? tool : tool.function)),
        (i) => (body.tools?.[i]?.type === 'custom' ? ['tools', i] : ['tools', i, 'function']),
      ),
      legacy: false,
    };
  }
  if (body.functions) {
    return {
      tools: readFunctions(body.functions, (i) => ['functions', i]),
      legacy: true,
    };
  }
  return { tools: [], legacy: false };
}

function onlyWithTools(param: string): GatewayError {
  return refuse(
    `Invalid value for '${param}': '${param}' is only allowed when 'tools' are specified.`,
    param,
  );
}

function readChoice(body: ChatCompletionRequest, tools: ToolDef[], legacy: boolean): ToolChoice {
  const parallel = !legacy && body.parallel_tool_calls !== false;
  if (!body.tools) {
    // (null is as good as absent, as for every optional parameter)
    if (body.tool_choice != null) throw onlyWithTools('tool_choice');
    if (body.parallel_tool_calls != null) throw onlyWithTools('parallel_tool_calls');
  }
  const choice = (legacy ? body.function_call : body.tool_choice) ?? undefined;
  const param = legacy ? 'function_call' : 'tool_choice';
  if (tools.length === 0) return { mode: 'none', parallel };
  if (choice === undefined || choice === 'auto') return { mode: 'auto', parallel };
  if (choice === 'none') return { mode: 'none', parallel };
  if (choice === 'required') return { mode: 'any', parallel };
  const known = (name: string, custom = false) => {
    if (!tools.some((tool) => tool.name === name && (tool.custom !== undefined) === custom)) {
      throw refuse(
        `Invalid value for '${param}': no ${custom ? 'custom tool' : 'function'} named '${name}' was specified in the '${legacy ? 'functions' : 'tools'}' parameter.`,
        param,
      );
    }
    return name;
  };
  if ('name' in choice) return { mode: 'named', name: known(choice.name), parallel };
  if (choice.type === 'function')
    return { mode: 'named', name: known(choice.function.name), parallel };
  if (choice.type === 'custom')
    return { mode: 'named', name: known(choice.custom.name, true), parallel };
  // allowed_tools: the model may use only these, on auto or required.
  const allowed = new Set(
    choice.allowed_tools.tools.map((t) =>
      t.type === 'custom' ? known(t.custom.name, true) : known(t.function.name),
    ),
  );
  tools.splice(0, tools.length, ...tools.filter((tool) => allowed.has(tool.name)));
  return { mode: choice.allowed_tools.mode === 'required' ? 'any' : 'auto', parallel };
}

function readOutput(body: ChatCompletionRequest): OutputFormat | undefined {
  const format = body.response_format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') {
    if (!body.messages.some((m) => /json/i.test(messageText(m)))) {
      throw refuse(
        "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        'messages',
      );
    }
    return { kind: 'json_object' };
  }
  const { name, schema = { type: 'object' }, strict } = format.json_schema;
  const problem =
    spendSchema(schemaBudget(), schema) ??
    (strict === true ? schemaMemo(schema, 'strict', strictSchemaProblem) : undefined) ??
    schemaProblem(schema) ??
    generationProblem(schema);
  if (problem !== undefined) {
    throw refuse(`Invalid schema for response_format '${name}': ${problem}`, 'response_format');
  }
  return { kind: 'json_schema', schema, path: ['response_format', 'json_schema', 'schema'] };
}

const UNSUPPORTED_IMAGE =
  "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].";

interface Media {
  tokens: number;
  audioTokens: number;
  blobs: string[];
}

/** The tokens and identity of one user message's media parts (`images`: the model sees them). */
function readMedia(message: ChatMessage, i: number, images: boolean): Media {
  const media: Media = { tokens: 0, audioTokens: 0, blobs: [] };
  if (message.role !== 'user' || typeof message.content === 'string') return media;
  message.content.forEach((part, j) => {
    const path = ['messages', i, 'content', j];
    if (part.type === 'image_url') {
      if (!images) {
        // upstream's `param`, dots before the indexes and all
        const param = `messages.[${i}].content.[${j}].type`;
        throw refuse('Invalid content type. image_url is only supported by certain models.', param);
      }
      const { url, detail } = part.image_url;
      const data = parseDataUrl(url);
      if (data) {
        const image = decodeImage(data.data);
        if (typeof image === 'string' || data.mediaType !== `image/${image.format}`) {
          throw refuse(UNSUPPORTED_IMAGE, null, 'invalid_image_format');
        }
        media.tokens += imageTokens(image.width, image.height, detail);
        media.blobs.push(data.data);
      } else if (/^https?:\/\/[^\s/]+/i.test(url)) {
        media.tokens += imageTokens(UNSEEN_IMAGE_SIDE, UNSEEN_IMAGE_SIDE, detail);
        media.blobs.push(url);
      } else {
        const param = bracket([...path, 'image_url', 'url']);
        throw refuse(
          `Invalid '${param}'. Expected a valid URL, but got a value with an invalid format.`,
          param,
          'invalid_value',
        );
      }
    } else if (part.type === 'input_audio') {
      const bytes = decodeBase64(part.input_audio.data);
      if (!bytes) throw fieldError([...path, 'input_audio', 'data'], 'must be Base64 audio');
      const tokens = Math.ceil(bytes.length / AUDIO_BYTES_PER_TOKEN);
      media.audioTokens += tokens;
      media.tokens += tokens;
      media.blobs.push(part.input_audio.data);
    } else if (part.type === 'file') {
      const { file_data: fileData, file_id: fileId } = part.file;
      if (fileData !== undefined) {
        const raw = parseDataUrl(fileData)?.data ?? fileData;
        const bytes = decodeBase64(raw);
        const pages = bytes && pdfPages(bytes);
        if (!pages) throw fieldError([...path, 'file', 'file_data'], 'must be a Base64 PDF');
        media.tokens += pages * PDF_PAGE_TOKENS;
        media.blobs.push(raw);
      } else if (fileId !== undefined) {
        media.tokens += PDF_PAGE_TOKENS;
        media.blobs.push(fileId);
      } else {
        throw fieldError([...path, 'file', 'file_data'], 'is required', 'missing');
      }
    }
  });
  return media;
}

/**
 * Tool calls and tool messages pair up: each `tool` message answers a call of the assistant
 * message before it, and every call is answered before the conversation moves on.
 */
function checkToolPairs(messages: readonly ChatMessage[]): void {
  let open: { ids: string[]; answered: Set<string> } | undefined;
  const unanswered = (at: number) => {
    const missing = open?.ids.filter((id) => !open?.answered.has(id)) ?? [];
    if (missing.length === 0) return;
    throw refuse(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
      `messages.[${at}].role`,
    );
  };
  messages.forEach((message, i) => {
    if (message.role === 'tool') {
      if (!open?.ids.includes(message.tool_call_id)) {
        throw refuse(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      }
      open.answered.add(message.tool_call_id);
      return;
    }
    unanswered(i);
    open =
      message.role === 'assistant' && message.tool_calls?.length
        ? { ids: message.tool_calls.map((call) => call.id), answered: new Set() }
        : undefined;
  });
  unanswered(messages.length);
}

/** A call of the history as a name and its text (a function's arguments, a custom input). */
const callOf = (
  call: NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']>[number],
) =>
  call.type === 'custom' ? { name: call.custom.name, arguments: call.custom.input } : call.function;

/** The tool results the conversation ends with, named after the calls they answer. */
function trailingResults(messages: readonly ChatMessage[]): ToolResult[] {
  const names = new Map<string, string>();
  for (const message of messages) {
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) names.set(call.id, callOf(call).name);
    }
  }
  const results: ToolResult[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role === 'tool') {
      results.unshift({
        name: names.get(message.tool_call_id),
        content: messageText(message),
        isError: false,
      });
    } else if (message.role === 'function') {
      results.unshift({ name: message.name, content: message.content ?? '', isError: false });
    } else break;
  }
  return results;
}

/** The prompt replies are keyed on and the user turns so far, as stubs and faults match them. */
export const chatPromptFacts = (body: Pick<ChatCompletionRequest, 'messages'>) => ({
  prompt: replyPrompt(body.messages, messageText),
  turn: body.messages.filter((m) => m.role === 'user' && messageText(m) !== '').length,
});

export function readChatPrompt(body: ChatCompletionRequest): ChatPrompt {
  body.messages.forEach((message, i) => {
    if (message.role === 'assistant' && message.content == null && !message.tool_calls?.length) {
      if (!message.function_call) {
        throw fieldError(['messages', i, 'content'], 'is required', 'missing');
      }
    }
  });
  if (body.stream_options && body.stream !== true) {
    // @see https://github.com/BerriAI/litellm/issues/5803 (upstream's words)
    throw refuse(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      'stream_options',
    );
  }
  if (body.top_logprobs != null && body.logprobs !== true) {
    throw fieldError(['top_logprobs'], 'is only allowed when logprobs is true');
  }
  checkLogitBias(body);
  for (const key of Object.keys(body.metadata ?? {})) {
    // @see https://platform.openai.com/docs/api-reference/chat/create (metadata)
    // Characters, not UTF-16 units (an emoji is two), as the values are counted.
    if (key.length > 64 && [...key].length > 64) {
      throw fieldError(['metadata'], 'keys must have at most 64 characters');
    }
  }
  checkLimitParams(body);
  const { tools, legacy, json: definitionsJson } = readTools(body);
  const choice = readChoice(body, tools, legacy);
  const output = readOutput(body);
  checkToolPairs(body.messages);

  const parts: ChatPromptPart[] = [];
  let audioTokens = 0;
  const schema = body.response_format?.type === 'json_schema' ? body.response_format : undefined;
  if (definitionsJson !== '' || schema) {
    parts.push({
      framing: 0,
      texts: [definitionsJson, schema ? JSON.stringify(schema) : ''],
    });
  }
  const images = seesImages(body.model);
  body.messages.forEach((message, i) => {
    const media = readMedia(message, i, images);
    audioTokens += media.audioTokens;
    const calls =
      message.role === 'assistant'
        ? [
            ...(message.tool_calls ?? []).map(callOf),
            ...(message.function_call ? [message.function_call] : []),
          ]
        : [];
    parts.push({
      framing:
        TOKENS_PER_MESSAGE +
        ('name' in message && message.name ? TOKENS_PER_NAME : 0) +
        media.tokens,
      texts: [messageText(message), ...calls.flatMap((call) => [call.name, call.arguments])],
      ...(media.blobs.length > 0 ? { blobs: media.blobs } : {}),
    });
  });
  const facts = chatPromptFacts(body);
  const effort = body.reasoning_effort ?? defaultEffortOf(body.model);
  const turn: Turn = {
    api: 'chat',
    model: body.model,
    prompt: facts.prompt,
    variant: 0,
    userTurns: facts.turn,
    results: trailingResults(body.messages),
    tools,
    choice,
    output,
    thinking: effort !== 'none',
    budget: generationBudget(),
    memo: {},
  };
  const promptTokens = countChatPrompt(parts);
  const maxTokens = completionLimit(body, promptTokens);
  return { parts, promptTokens, maxTokens, audioTokens, turn, legacy, effort };
}

/**
 * One output limit at a time; a reasoning model takes `max_completion_tokens` only and the
 * default `temperature` only, refused in upstream's words.
 * @see https://github.com/langchain-ai/langgraph/issues/5943
 * @see https://github.com/crewAIInc/crewAI/issues/2738
 * @see https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/reasoning
 */
function checkLimitParams(body: ChatCompletionRequest): void {
  if (body.max_tokens != null && body.max_completion_tokens != null) {
    throw refuse(
      "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.",
      'max_tokens',
      'invalid_parameter_combination',
    );
  }
  checkReasoningEffort(body);
  if (!isReasoningModel(body.model)) return;
  if (body.max_tokens != null) {
    throw refuse(
      "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      'max_tokens',
      'unsupported_parameter',
    );
  }
  checkSampling(body);
}

/**
 * A reasoning model that reasons (GPT-5.1 and later reason only when `reasoning_effort` is not
 * `none`, their default) samples as it sees fit: `temperature` other than 1, `top_p` other than
 * 1, a presence or frequency penalty other than 0, and `logprobs` are refused, in upstream's
 * words. (The default values themselves are let through, as clients that always send them do.)
 * @see https://platform.openai.com/docs/guides/reasoning#limitations
 * @see https://github.com/vercel/ai/issues/10932
 * @see https://github.com/simonw/llm/issues/731
 */
function checkSampling(body: ChatCompletionRequest): void {
  if ((body.reasoning_effort ?? defaultEffortOf(body.model)) === 'none') return;
  if (body.temperature != null && body.temperature !== 1) {
    throw refuse(
      `Unsupported value: 'temperature' does not support ${body.temperature} with this model. Only the default (1) value is supported.`,
      'temperature',
      'unsupported_value',
    );
  }
  const changed = (
    [
      ['top_p', body.top_p, 1],
      ['presence_penalty', body.presence_penalty, 0],
      ['frequency_penalty', body.frequency_penalty, 0],
    ] as const
  ).find(([, value, fallback]) => value != null && value !== fallback);
  if (changed) {
    throw refuse(
      `Unsupported parameter: '${changed[0]}' is not supported with this model.`,
      changed[0],
      'unsupported_parameter',
    );
  }
  if (body.logprobs === true) {
    throw refuse('You are not allowed to request logprobs from this model', 'logprobs');
  }
}

/**
 * `reasoning_effort` on a model that does not reason, or a value its model does not take, is
 * refused in upstream's words.
 * @see https://github.com/Kilo-Org/cloud/pull/3807
 * @see https://learn.microsoft.com/en-us/javascript/api/@azure/ai-projects/reasoningeffort
 */
function checkReasoningEffort(body: ChatCompletionRequest): void {
  const effort = body.reasoning_effort;
  if (effort == null) return;
  const efforts = reasoningEffortsOf(body.model);
  if (efforts === 'refused') {
    throw refuse(
      "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
      'reasoning_effort',
      'unsupported_parameter',
    );
  }
  if (efforts !== undefined && !efforts.includes(effort)) {
    const quoted = efforts.map((e) => `'${e}'`);
    const list =
      quoted.length === 1
        ? quoted[0]
        : `${quoted.slice(0, -1).join(', ')}${quoted.length > 2 ? ',' : ''} and ${quoted.at(-1)}`;
    throw refuse(
      `Unsupported value: 'reasoning_effort' does not support '${effort}' with this model. Supported values are: ${list}.`,
      'reasoning_effort',
      'unsupported_value',
    );
  }
}

/**
 * `logit_bias` keys are token ids: non-negative integers up to the model's last token id,
 * refused in upstream's words otherwise (the bias values' range is the schema's).
 * @see https://github.com/openai/openai-python/issues/572
 * @see https://github.com/sashabaranov/go-openai/issues/129
 */
function checkLogitBias(body: ChatCompletionRequest): void {
  if (!body.logit_bias) return;
  const last = lastTokenIdOf(body.model);
  for (const key in body.logit_bias) {
    if (!/^\d+$/.test(key)) {
      throw refuse(
        `Invalid key in 'logit_bias': ${key}. You should only be submitting non-negative integers.`,
        'logit_bias',
      );
    }
    if (Number(key) > last) {
      throw refuse(`Invalid key in 'logit_bias': ${key}. Maximum value is ${last}.`, 'logit_bias');
    }
  }
}

/**
 * The completion tokens a choice may have, as upstream limits them: a limit above the model's
 * output limit, and a prompt (plus the asked completion) beyond its context window, are refused.
 * @see https://platform.openai.com/docs/models
 */
function completionLimit(body: ChatCompletionRequest, promptTokens: number): number {
  const limits = limitsOf('chat', body.model);
  const param = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
  const asked = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  if (asked !== undefined && asked > limits.maxOutput) {
    throw refuse(
      `${param} is too large: ${asked}. This model supports at most ${limits.maxOutput} completion tokens, whereas you provided ${asked}.`,
      param,
      'invalid_value',
    );
  }
  const window = limits.contextWindow;
  if (promptTokens + (asked ?? 0) > window) {
    throw refuse(
      asked === undefined
        ? `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`
        : `This model's maximum context length is ${window} tokens. However, you requested ${promptTokens + asked} tokens (${promptTokens} in the messages, ${asked} in the completion). Please reduce the length of the messages or completion.`,
      'messages',
      'context_length_exceeded',
    );
  }
  return asked ?? Math.min(limits.maxOutput, window - promptTokens);
}

export function countChatPrompt(parts: readonly ChatPromptPart[]): number {
  let total = TOKENS_REPLY_PRIMING;
  for (const part of parts) {
    total += part.framing;
    for (const text of part.texts) total += countTokens(text);
  }
  return total;
}
