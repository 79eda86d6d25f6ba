import { createHmac } from 'node:crypto';
import { fieldError, type PathSegment } from '../platform/errors.js';
import { fnv1a } from '../platform/hash.js';
import { countTokens, shorten } from '../platform/tokens.js';
import { readSaid, type Said } from './believable.js';
import { replyOfHash } from './default-reply.js';
import { type Budget, schemaInstance, UnsatisfiableSchemaError } from './json-schema.js';
import { LarkError, type LarkGrammar, sampleLark } from './lark.js';

/**
 * What an agent sends, the same for chat and messages once each group has read its own wire
 * format: the prompt, the tools it offers, how it lets the model choose, the results it sends
 * back, the output format it wants. The default reply decides from this alone (docs/agents.md "How
 * replies are chosen"); scripted rules (replies.ts) may answer instead.
 */

export type ReplyApi = 'chat' | 'messages';

/**
 * Why a reply stopped, in each API's words (a scripted rule may say any of them).
 * @see https://platform.claude.com/docs/en/api/handling-stop-reasons
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
export const STOP_REASONS = [
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
] as const;
export const FINISH_REASONS = [
  'stop',
  'length',
  'content_filter',
  'tool_calls',
  'function_call',
] as const;

export interface ToolDef {
  name: string;
  /** The JSON Schema of the tool's input (`input_schema`, `parameters`). */
  schema: object;
  /** Where the schema is in the request, for an error about it. */
  path: PathSegment[];
  /** A chat custom tool: its input is text, of this format (docs/agents.md "Custom tools"). */
  custom?: CustomFormat;
  /**
   * A tool whose input the model writes from the turn, not from its schema (web search and
   * fetch); undefined when the turn gives it nothing to work on (no URL to fetch), and then
   * the tool is called only when forced.
   */
  inputOf?: (turn: Turn) => unknown;
  /**
   * Left out of the prompt until a search finds it (messages' `defer_loading`): a tool called
   * when nothing is named is one the model sees, when there is one.
   */
  deferred?: boolean;
}

/** What a custom tool's input is: free text, or text its grammar derives. */
export type CustomFormat =
  | { kind: 'text' }
  | { kind: 'regex'; pattern: string }
  | { kind: 'lark'; grammar: LarkGrammar };

/** A regex format or terminal as a JSON schema: a string the whole of which matches. */
export const wholeMatch = (pattern: string) => ({ type: 'string', pattern: `^(?:${pattern})$` });

export type ToolMode = 'none' | 'auto' | 'any' | 'named';

export interface ToolChoice {
  mode: ToolMode;
  /** The tool a `named` choice forces. */
  name?: string;
  /** Whether several tools may be called at once. */
  parallel: boolean;
}

export interface ToolResult {
  /** The name of the tool the result answers, when the call is in the conversation. */
  name: string | undefined;
  content: string;
  isError: boolean;
}

export type OutputFormat =
  | { kind: 'json_schema'; schema: object; path: PathSegment[] }
  | { kind: 'json_object' };

/** A value for a schema of the request; a schema nothing satisfies is the client's 400. */
async function instanceFor(
  schema: object,
  path: PathSegment[],
  seed: number,
  budget: Budget | undefined,
  said?: () => Said,
): Promise<unknown> {
  try {
    return await schemaInstance(schema, seed, budget, said);
  } catch (err) {
    if (err instanceof UnsatisfiableSchemaError) throw fieldError(path, err.message);
    throw err;
  }
}

export interface Turn {
  api: ReplyApi;
  model: string;
  /** The last user text (tool results aside). */
  prompt: string;
  /** Which choice (chat `n`); scripted replies are the same for every choice. */
  variant: number;
  /** User turns with text so far (1 for the first question). */
  userTurns: number;
  /** The tool results the last turn sends back (none when it is a question). */
  results: ToolResult[];
  tools: ToolDef[];
  choice: ToolChoice;
  output: OutputFormat | undefined;
  /** Thinking (messages) or reasoning (chat) was asked for. */
  thinking: boolean;
  /**
   * What the values made for the request may still cost, shared by its choices (a Turn is
   * copied for each): made with the Turn, so that every Turn has the same shape.
   */
  budget?: Budget;
  /** What is read from the prompt once, shared by the choices as `budget` is (see promptHash). */
  memo?: TurnMemo;
  /** The http(s) URLs the conversation holds, in order (read when web fetch is offered). */
  urls?: readonly string[];
  /**
   * Tools the model cannot see and has no way to find (messages: deferred, with no tool search
   * tool, and not found by a client's own search yet): called only when forced.
   */
  hidden?: ReadonlySet<string>;
}

export interface TurnMemo {
  /** The prompt these are of. */
  prompt?: string;
  hash?: number;
  snippet?: string;
  /** What the prompt says that a generated value may take (names, places, numbers). */
  said?: Said;
}

/** The memo of the turn's prompt (a fresh one when the turn has none, or another prompt's). */
function memoOf(turn: Turn): TurnMemo {
  const memo = turn.memo;
  if (!memo) return { prompt: turn.prompt };
  if (memo.prompt !== turn.prompt) {
    memo.prompt = turn.prompt;
    memo.hash = undefined;
    memo.snippet = undefined;
    memo.said = undefined;
  }
  return memo;
}

/** What the turn's prompt says, read once per request when a value is made (see believable.ts). */
function saidOf(turn: Turn): Said {
  const memo = memoOf(turn);
  memo.said ??= readSaid(turn.prompt);
  return memo.said;
}

/**
 * fnv1a of the prompt, once per request: a request of 128 choices hashed a 2 MB prompt 384
 * times (each choice's reply, thinking and tool seeds), holding the process for 12 s.
 */
export function promptHash(turn: Turn): number {
  const memo = memoOf(turn);
  memo.hash ??= fnv1a(turn.prompt);
  return memo.hash;
}

/** fnv1a of the prompt followed by `rest`: the prompt's hash, carried on (FNV-1a runs in order). */
const promptHashWith = (turn: Turn, rest: string) => fnv1a(rest, promptHash(turn));

export interface ToolCall {
  name: string;
  input: unknown;
}

/** A reply before `max_tokens` and stop sequences cut it. */
export interface Plan {
  thinking?: string;
  text: string;
  /** Tokens of `text`. */
  tokens: number;
  calls: ToolCall[];
}

export const NO_TOOLS: ToolChoice = { mode: 'none', parallel: true };

/** The tools a turn calls by default (docs/agents.md "How replies are chosen"). */
export function chooseTools(turn: Turn): ToolDef[] {
  const { tools, choice } = turn;
  if (tools.length === 0 || choice.mode === 'none') return [];
  if (choice.mode === 'named') return tools.filter((tool) => tool.name === choice.name).slice(0, 1);
  // On auto, a turn that sends results back gets an answer, so an agent loop ends.
  if (choice.mode === 'auto' && turn.results.length > 0) return [];
  const prompt = turn.prompt.toLowerCase();
  const hidden = turn.hidden;
  const seen = hidden ? tools.filter((tool) => !hidden.has(tool.name)) : tools;
  const named = seen.filter((tool) => prompt.includes(tool.name.toLowerCase()));
  // (a tool the turn gives nothing to work on is called only when named or forced: on `any`,
  // when no other is left)
  const callable = (tool: ToolDef) => !tool.inputOf || tool.inputOf(turn) !== undefined;
  const usable = () => seen.find((tool) => !tool.deferred && callable(tool)) ?? seen.find(callable);
  const first = usable() ?? (choice.mode === 'any' ? seen[0] : undefined);
  const picked = named.length > 0 ? named : first ? [first] : [];
  return choice.parallel ? picked : picked.slice(0, 1);
}

/** The seed of everything generated for a turn: the same request makes the same values. */
export const turnSeed = (turn: Turn, salt: string) =>
  promptHashWith(turn, `\n${salt}\n${turn.variant}`);

/** Tool input for `tool`, made from its schema (a custom tool's: text of its format). */
export const toolInput = (turn: Turn, tool: ToolDef): Promise<unknown> => {
  if (tool.inputOf) return Promise.resolve(tool.inputOf(turn) ?? {});
  const seed = turnSeed(turn, `tool:${tool.name}`);
  const format = tool.custom;
  if (!format) return instanceFor(tool.schema, tool.path, seed, turn.budget, () => saidOf(turn));
  if (format.kind === 'text') return Promise.resolve(replyOfHash(seed, turn.variant).text);
  if (format.kind === 'regex') {
    return instanceFor(wholeMatch(format.pattern), tool.path, seed, turn.budget);
  }
  let terminal = 0;
  return sampleLark(format.grammar, async (source) =>
    String(await instanceFor(wholeMatch(source), tool.path, seed + terminal++, turn.budget)),
  ).catch((err: unknown) => {
    if (err instanceof LarkError) throw fieldError(tool.path, err.message);
    throw err;
  });
};

const snippet = (text: string) => shorten(text.replace(/\s+/g, ' ').trim(), 200);

/** The answer to tool results: it says what each returned, then the default words. */
function resultText(turn: Turn): string {
  const said = turn.results.map((result) => {
    const tool = result.name ?? 'tool';
    const verb = result.isError ? 'failed with' : 'returned';
    return `The ${tool} tool ${verb}: ${snippet(result.content) || '(nothing)'}.`;
  });
  const results = turn.results.map((r) => r.content).join('\n');
  const reply = replyOfHash(promptHashWith(turn, `\n${results}`), turn.variant);
  return `${said.join(' ')} ${reply.text}`;
}

/** The text of a structured answer: JSON valid against the schema, or a JSON object. */
export async function structuredText(turn: Turn, output: OutputFormat): Promise<string> {
  if (output.kind === 'json_object') {
    return JSON.stringify({ answer: replyOfHash(promptHash(turn), turn.variant).text });
  }
  return JSON.stringify(
    await instanceFor(output.schema, output.path, turnSeed(turn, 'output'), turn.budget, () =>
      saidOf(turn),
    ),
  );
}

/** What the model "thought" before answering: deterministic, and short. */
export function thinkingText(turn: Turn, calls: readonly ToolCall[]): string {
  const memo = memoOf(turn);
  memo.snippet ??= snippet(turn.prompt);
  const asked = memo.snippet || 'the conversation so far';
  const plan =
    calls.length > 0
      ? `I should call ${calls.map((c) => c.name).join(' and ')}.`
      : turn.results.length > 0
        ? 'I have the tool results and can answer now.'
        : 'I can answer this directly.';
  return `The request asks: "${asked}". ${plan} ${replyOfHash(promptHash(turn), turn.variant + 1000).text}`;
}

/** A line a messages reply puts before the tool calls it makes on its own (auto). */
export const toolPreface = (calls: readonly ToolCall[]) =>
  `I will use the ${calls.map((c) => c.name).join(' and ')} tool${calls.length > 1 ? 's' : ''} for this.`;

/** The default reply of a turn (no scripted rule matched). */
export async function defaultPlan(turn: Turn): Promise<Plan> {
  const tools = chooseTools(turn);
  const calls: ToolCall[] = [];
  for (const tool of tools) calls.push({ name: tool.name, input: await toolInput(turn, tool) });
  let text: string;
  if (calls.length > 0) {
    // With an output format, any text is the format's JSON: a call comes alone.
    text =
      turn.api === 'messages' && turn.choice.mode === 'auto' && !turn.output
        ? toolPreface(calls)
        : '';
  } else if (turn.output) {
    text = await structuredText(turn, turn.output);
  } else if (turn.results.length > 0) {
    text = resultText(turn);
  } else {
    const reply = replyOfHash(promptHash(turn), turn.variant);
    return withThinking(turn, { text: reply.text, tokens: reply.tokens, calls });
  }
  return withThinking(turn, { text, tokens: countTokens(text), calls });
}

export const withThinking = (turn: Turn, plan: Plan): Plan =>
  turn.thinking && plan.thinking === undefined
    ? { ...plan, thinking: thinkingText(turn, plan.calls) }
    : plan;

/**
 * Thinking signatures: an HMAC of the thinking text under a fixed key, so a block sent back
 * unchanged verifies and an edited one does not (upstream refuses modified thinking blocks).
 */
const SIGNING_KEY = 'gateway-emulator thinking signature v1';

export const signThinking = (thinking: string) =>
  createHmac('sha256', SIGNING_KEY).update(thinking).digest('base64');

export const verifyThinking = (thinking: string, signature: string) =>
  signThinking(thinking) === signature;
