import {
  type CompiledMatch,
  compileMatch,
  type MatchContext,
  meets,
  regexScan,
  scanWithin,
  shownMatch,
  storableMatch,
} from '../harness/match.js';
import { DEFAULT_SESSION } from '../harness/session.js';
import type { Feature } from '../platform/features.js';
import { type LinearRegex, linearRegex, type RegexMatch } from '../platform/linear-regex.js';
import { after, allOf } from '../platform/maybe.js';
import { countTokens } from '../platform/tokens.js';
import {
  MemoryRuleBook,
  type RuleBook,
  type RuleRecord,
  type RuleUse,
} from '../state/rule-book.js';
import { MemorySequences, type Sequences } from '../state/sequences.js';
import {
  defaultPlan,
  type Plan,
  type ReplyApi,
  structuredText,
  type ToolCall,
  type Turn,
  thinkingText,
  toolInput,
} from './agent.js';
import {
  type Fixtures,
  type LoadedRule,
  type ReplyRuleData,
  type ReplyStep,
  sharedMatch,
} from './fixtures.js';

export type { ReplyApi };

/** A reply, and what a scripted rule says about it. */
export interface ChosenReply extends Plan {
  /** The rule that gave it, if one did. */
  rule?: LoadedRule | StubRule;
  /** The step of the rule that gave it: its reasons replace the natural ones. */
  step?: ReplyStep;
}

interface CompiledRule {
  rule: LoadedRule | StubRule;
  regex?: LinearRegex;
  /** Whether the rule's replies use `$n` (or `$&`): only then are the regex's groups read. */
  groups: boolean;
  /** What the request itself must be (path, key, header, body), when the rule says. */
  request?: CompiledMatch;
  /** Token count of a plain-text reply with no `$n` references, counted once. */
  tokens?: number;
  /** The rule's name for its sequence counters (`f<n>`: fixture rule n; `s<id>`: stub id). */
  key: string;
}

/** A plan as a rule chose it: every field set, so that all have one shape. */
const chosen = (plan: Plan, rule: LoadedRule | StubRule, step: ReplyStep): ChosenReply => ({
  text: plan.text,
  tokens: plan.tokens,
  calls: plan.calls,
  thinking: plan.thinking,
  rule,
  step,
});

/** A reply rule added at run time (`POST /_emulator/replies`). */
export interface StubInput extends ReplyRuleData {
  /** Higher wins; equal priorities go in the order they were added. Default 0. */
  priority?: number;
  /** Answers this many times, then is removed. */
  times?: number;
}

export interface StubRule extends StubInput {
  id: number;
  session: string;
}

interface Stub extends CompiledRule {
  rule: StubRule;
}

/** Stubs held at once, over all sessions. */
export const MAX_STUBS = 1000;
/** The JSON of all the stubs held, at most (a body may be 32 MB; 1000 of them would not fit). */
export const MAX_STUB_BYTES = 16 * 1024 * 1024;
/** Sessions a rule counts its sequence steps for; the oldest is forgotten past this. */
const SEQUENCE_SESSIONS = 1000;

const hasReferences = (text: string) => /\$(\d|&)/.test(text);

/**
 * The reply engine shared by chat and messages: the stubs of the request's session (highest
 * priority first), then the fixture rules in file order; the first rule that matches a turn
 * answers it (text, tool calls, JSON, thinking; a sequence answers with its steps in turn);
 * any other turn gets the default reply (agent.ts).
 */
export class Replies implements Feature {
  readonly name = 'stubs';
  private compiled: CompiledRule[] = [];
  /** Each stored stub compiled, by the record it was made from. */
  private stubCache = new WeakMap<RuleRecord<StubInput>, Stub>();
  /** The stubs in the order they are tried, for the book's rules they were sorted from. */
  private sorted: { from: readonly RuleRecord<StubInput>[]; stubs: Stub[] } = {
    from: [],
    stubs: [],
  };

  constructor(
    fixtures: Fixtures,
    private readonly hashKey: (key: string) => string,
    private readonly book: RuleBook<StubInput> = new MemoryRuleBook({
      maxCount: MAX_STUBS,
      maxBytes: MAX_STUB_BYTES,
    }),
    private readonly sequences: Sequences = new MemorySequences(SEQUENCE_SESSIONS),
  ) {
    this.load(fixtures, true);
  }

  /** Takes new fixtures: their sequences start over (unless another replica did that). */
  load(fixtures: Fixtures, keepSequences = false): void | Promise<void> {
    this.compiled = fixtures.rules.map((rule, i) => this.compile(rule, `f${i}`));
    if (!keepSequences) return this.sequences.clear('f');
  }

  get rules(): LoadedRule[] {
    return this.compiled.map((c) => c.rule as LoadedRule);
  }

  /**
   * Adds a stub (a rule already checked against the schema) to a session. Throws a
   * MatchError-like message for a rule that cannot be used; undefined when MAX_STUBS are held
   * or it would take the stubs past MAX_STUB_BYTES.
   */
  addStub(input: StubInput, session: string): StubView | undefined | Promise<StubView | undefined> {
    this.compile({ ...input, id: 0, session }, 's0');
    // Stored with fingerprints for its credentials (a key, a credential header's value).
    const stored = input.match
      ? { ...input, match: storableMatch(input.match, this.hashKey) }
      : input;
    const added = this.book.add(stored, session, input.times);
    const shown = (record: RuleRecord<StubInput> | undefined) =>
      record && stubView(record, { remaining: record.times, fired: 0 });
    return after(added, shown);
  }

  /** The stubs of one session, or of all, in the order they are tried. */
  listStubs(session?: string): StubView[] | Promise<StubView[]> {
    const shown = (uses: Map<number, RuleUse>) =>
      this.stubs()
        .filter((s) => uses.has(s.rule.id))
        .filter((s) => session === undefined || s.rule.session === session)
        .map((s) => {
          const record = { id: s.rule.id, session: s.rule.session, input: s.rule };
          return stubView(record, uses.get(s.rule.id) ?? { remaining: s.rule.times, fired: 0 });
        });
    // The rules as held now (a stub used up elsewhere is gone), then their uses.
    const rules = this.book.current();
    if (rules instanceof Promise) return rules.then(() => this.book.uses()).then(shown);
    return after(this.book.uses(), shown);
  }

  /** Removes one stub; false when there is none of that id (in that session). */
  removeStub(id: number, session?: string): boolean | Promise<boolean> {
    return this.book.remove(id, session);
  }

  /** Removes the stubs of one session, or all of them. */
  clearStubs(session?: string): void | Promise<void> {
    return this.book.clear(session);
  }

  /** Removes every stub and starts every sequence over. */
  reset(): void | Promise<void> {
    return allOf(this.book.reset(), this.sequences.clear());
  }

  resetSession(session: string): void | Promise<void> {
    return allOf(this.book.clear(session), this.sequences.clear(undefined, session));
  }

  /**
   * The replies of a turn, one per choice (chat `n`): a scripted reply is the same for every
   * choice and advances a sequence once; default replies differ per choice.
   */
  async replies(turn: Turn, choices = 1, context?: MatchContext): Promise<ChosenReply[]> {
    const session = context?.session ?? DEFAULT_SESSION;
    // The stubs' regexes, then the fixtures', within one budget (see REGEX_SCAN_CHARS).
    const scan = regexScan();
    const stubs = this.stubs();
    let hit: { entry: CompiledRule; found: RegexMatch | true } | undefined;
    for (let from = 0; from < stubs.length; ) {
      const found = this.find(stubs, from, turn, session, context, scan);
      if (!found) break;
      // A stub another process used up meanwhile is passed over: its last use is spent once.
      const use = this.book.spend((found.entry as Stub).rule.id);
      if ((use instanceof Promise ? await use : use) !== undefined) {
        hit = found;
        break;
      }
      from = stubs.indexOf(found.entry as Stub) + 1;
    }
    hit ??= this.find(this.compiled, 0, turn, session, context, scan);
    if (hit) {
      const { entry, found } = hit;
      const { rule } = entry;
      let step: ReplyStep = rule;
      if (rule.sequence) {
        const next = this.sequences.next(entry.key, session);
        const used = next instanceof Promise ? await next : next;
        step = rule.sequence[Math.min(used, rule.sequence.length - 1)] as ReplyStep;
      }
      const plan = await scriptedPlan(step, turn, found, step === rule ? entry.tokens : undefined);
      return Array.from({ length: choices }, () => chosen(plan, rule, step));
    }
    const plans: ChosenReply[] = [];
    for (let variant = 0; variant < choices; variant++) {
      plans.push(await defaultPlan({ ...turn, variant }));
    }
    return plans;
  }

  /** The stubs, compiled, highest priority first (equal ones in the order they were added). */
  private stubs(): Stub[] {
    const records = this.book.rules;
    if (this.sorted.from === records) return this.sorted.stubs;
    const stubs = records
      .map((record) => {
        let stub = this.stubCache.get(record);
        if (!stub) {
          const rule: StubRule = { ...record.input, id: record.id, session: record.session };
          stub = { ...this.compile(rule, `s${record.id}`), rule };
          this.stubCache.set(record, stub);
        }
        return stub;
      })
      .sort((a, b) => (b.rule.priority ?? 0) - (a.rule.priority ?? 0));
    this.sorted = { from: records, stubs };
    return stubs;
  }

  /** The first rule of `rules` from `from` on that answers the turn (a stub: only in its own session). */
  private find(
    rules: readonly CompiledRule[],
    from: number,
    turn: Turn,
    session: string,
    context: MatchContext | undefined,
    scan: { left: number },
  ): { entry: CompiledRule; found: RegexMatch | true } | undefined {
    for (let i = from; i < rules.length; i++) {
      const entry = rules[i] as CompiledRule;
      if ('session' in entry.rule && (entry.rule as StubRule).session !== session) continue;
      const found = this.matches(entry, turn, context, scan);
      if (found) return { entry, found };
    }
    return undefined;
  }

  private compile(rule: LoadedRule | StubRule, key: string): CompiledRule {
    const entry: CompiledRule = {
      rule,
      key,
      groups: hasReferences(JSON.stringify(rule)),
    };
    const match = rule.match ?? {};
    const pattern = match.regex ?? match.prompt_regex;
    if (pattern !== undefined) entry.regex = linearRegex(pattern, match.flags);
    const request = sharedMatch(match);
    if (Object.keys(request).length > 0) entry.request = compileMatch(request, this.hashKey);
    if (
      rule.reply !== undefined &&
      rule.json === undefined &&
      !rule.sequence &&
      !hasReferences(rule.reply)
    ) {
      entry.tokens = countTokens(rule.reply);
    }
    return entry;
  }

  /** The regex match (or true) when a rule applies to a turn, else undefined. */
  private matches(
    entry: CompiledRule,
    turn: Turn,
    context: MatchContext | undefined,
    scan: { left: number },
  ): RegexMatch | true | undefined {
    const { rule } = entry;
    if (rule.api !== undefined && rule.api !== turn.api) return undefined;
    if (rule.model !== undefined) {
      const models = typeof rule.model === 'string' ? [rule.model] : rule.model;
      if (!models.includes(turn.model)) return undefined;
    }
    const match = rule.match ?? {};
    if (match.group !== undefined && match.group !== turn.api) return undefined;
    if (match.model !== undefined && match.model !== turn.model) return undefined;
    if (match.turn !== undefined && match.turn !== turn.userTurns) return undefined;
    if (match.after_tool !== undefined && !turn.results.some((r) => r.name === match.after_tool)) {
      return undefined;
    }
    if (
      match.tool_offered !== undefined &&
      !turn.tools.some((tool) => tool.name === match.tool_offered)
    ) {
      return undefined;
    }
    if (entry.request && (!context || !meets(entry.request, context.target()))) return undefined;
    if (match.contains !== undefined && !turn.prompt.includes(match.contains)) return undefined;
    if (entry.regex) {
      if (!scanWithin(scan, turn.prompt)) return undefined;
      // The groups cost far more than the test: read only for a reply that uses them.
      if (!entry.groups) return entry.regex.test(turn.prompt) ? true : undefined;
      return entry.regex.exec(turn.prompt) ?? undefined;
    }
    return true;
  }
}

/** A stub as the control surface shows it: its rule (a key never echoed) and its use. */
export interface StubView extends StubRule {
  remaining: number | null;
  fired: number;
}

function stubView(
  record: { id: number; session: string; input: StubInput },
  use: RuleUse,
): StubView {
  const { input } = record;
  const match = input.match && shownMatch(input.match);
  const {
    id: _id,
    session: _session,
    ...rest
  } = input as StubInput & {
    id?: number;
    session?: string;
  };
  return {
    ...rest,
    id: record.id,
    session: record.session,
    ...(match === undefined ? {} : { match }),
    remaining: use.remaining ?? null,
    fired: use.fired,
  };
}

/** A rule's reply for a turn: `$n` filled in, JSON and tool inputs made where asked. */
async function scriptedPlan(
  step: ReplyStep,
  turn: Turn,
  found: RegexMatch | true,
  knownTokens: number | undefined,
): Promise<Plan> {
  let text = '';
  if (step.json !== undefined) {
    text =
      step.json === true
        ? await structuredText(turn, turn.output ?? { kind: 'json_object' })
        : JSON.stringify(step.json);
  } else if (step.reply !== undefined) {
    text =
      found === true
        ? step.reply
        : step.reply.replace(/\$(\d|&)/g, (_, ref: string) =>
            ref === '&' ? (found[0] ?? '') : (found[Number(ref)] ?? ''),
          );
  }
  const calls: ToolCall[] = [];
  for (const call of step.tool_calls ?? []) {
    const tool = turn.tools.find((t) => t.name === call.name);
    const input = call.input ?? (tool ? await toolInput(turn, tool) : {});
    calls.push({ name: call.name, input });
  }
  const plan: Plan = { text, tokens: knownTokens ?? countTokens(text), calls };
  if (step.thinking !== undefined) plan.thinking = step.thinking;
  else if (turn.thinking) plan.thinking = thinkingText(turn, calls);
  return plan;
}

/**
 * The text a reply is keyed on, for both chat and messages: the last run of user turns that
 * hold text (consecutive ones joined by a newline), or the whole conversation when no turn is
 * the user's.
 */
export function replyPrompt<M extends { role: string }>(
  messages: readonly M[],
  textOf: (message: M) => string,
): string {
  let end = messages.length - 1;
  while (end >= 0 && (messages[end]?.role !== 'user' || textOf(messages[end] as M) === '')) end--;
  if (end < 0) return messages.map(textOf).join('\n');
  let text = textOf(messages[end] as M);
  for (let i = end - 1; i >= 0 && messages[i]?.role === 'user'; i--) {
    text = `${textOf(messages[i] as M)}\n${text}`;
  }
  return text;
}
