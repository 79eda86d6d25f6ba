import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The request and answer types of the official SDKs, read from their type definitions with the
 * TypeScript compiler (one program, built once per run), as plain shapes a test can walk: the
 * literals a request field takes, the fields an answer must carry. The SDKs are the installed
 * ones, or those of the folder `SDK_TYPES_DIR` names (its node_modules: `npm run
 * check:sdk-latest` installs the newest releases there).
 */

export type Shape =
  | { kind: 'literal'; value: string | number | boolean }
  | { kind: 'string' | 'number' | 'boolean' | 'null' | 'unknown' }
  | { kind: 'array'; items: Shape }
  | ObjectShape
  | { kind: 'union'; members: Shape[] };

export interface ObjectShape {
  kind: 'object';
  /** The type's name in the SDK (`TextBlockParam`, ...), for reports. */
  name: string;
  props: Map<string, { shape: Shape; optional: boolean }>;
  /** `{[key: string]: T}`'s T. */
  index?: Shape;
}

/** The types this reads, by the name the test uses, with where each SDK exports it. */
const ENTRY = `
import type * as Chat from 'openai/resources/chat/completions/completions';
import type * as Messages from '@anthropic-ai/sdk/resources/messages/messages';
export interface Types {
  chatRequest: Chat.ChatCompletionCreateParamsNonStreaming;
  chatCompletion: Chat.ChatCompletion;
  chatChunk: Chat.ChatCompletionChunk;
  messagesRequest: Messages.MessageCreateParamsNonStreaming;
  countTokensRequest: Messages.MessageCountTokensParams;
  message: Messages.Message;
  messageEvent: Messages.RawMessageStreamEvent;
  tokensCount: Messages.MessageTokensCount;
}
`;

export type TypeName =
  | 'chatRequest'
  | 'chatCompletion'
  | 'chatChunk'
  | 'messagesRequest'
  | 'countTokensRequest'
  | 'message'
  | 'messageEvent'
  | 'tokensCount';

export interface SdkTypes {
  /** The folder whose node_modules the SDKs were read from. */
  root: string;
  versions: { openai: string; '@anthropic-ai/sdk': string };
  shapes: Record<TypeName, Shape>;
}

/** Reads the SDKs' types under `root` (default: `SDK_TYPES_DIR`, else this project). */
export function loadSdkTypes(
  root = resolve(process.env.SDK_TYPES_DIR ?? new URL('../..', import.meta.url).pathname),
): SdkTypes {
  const entry = join(root, '__sdk_types__.ts');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    // Paths into the packages' folders, whatever their `exports` list.
    moduleResolution: ts.ModuleResolutionKind.Node10,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (name, ...rest) =>
    name === entry
      ? ts.createSourceFile(name, ENTRY, ts.ScriptTarget.ES2022)
      : getSourceFile.call(host, name, ...rest);
  const fileExists = host.fileExists;
  host.fileExists = (name) => name === entry || fileExists.call(host, name);
  const program = ts.createProgram([entry], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  const types = source?.statements.find(ts.isInterfaceDeclaration);
  if (!types) throw new Error('the SDK types entry did not parse');
  const shapes = {} as Record<TypeName, Shape>;
  const cache = new Map<ts.Type, Shape>();
  for (const member of types.members) {
    if (!ts.isPropertySignature(member) || !member.type) continue;
    const type = checker.getTypeFromTypeNode(member.type);
    if (type.flags & ts.TypeFlags.Any) {
      throw new Error(`${member.name.getText(source)}: not found in the SDKs under ${root}`);
    }
    shapes[member.name.getText(source) as TypeName] = shapeOf(checker, type, cache);
  }
  const version = (name: string) => {
    const file = join(root, 'node_modules', name, 'package.json');
    return existsSync(file)
      ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version
      : 'missing';
  };
  return {
    root,
    versions: { openai: version('openai'), '@anthropic-ai/sdk': version('@anthropic-ai/sdk') },
    shapes,
  };
}

function shapeOf(checker: ts.TypeChecker, type: ts.Type, cache: Map<ts.Type, Shape>): Shape {
  const known = cache.get(type);
  if (known) return known;
  const f = type.flags;
  if (type.isUnion()) {
    const members = type.types.filter((t) => !(t.flags & ts.TypeFlags.Undefined));
    // `boolean` is `true | false` to the checker
    const booleans = members.filter((t) => t.flags & ts.TypeFlags.BooleanLiteral);
    const rest = members.filter((t) => !(t.flags & ts.TypeFlags.BooleanLiteral));
    const shapes: Shape[] =
      booleans.length === 2
        ? [{ kind: 'boolean' }]
        : booleans.map((t) => ({
            kind: 'literal',
            value: checker.typeToString(t) === 'true',
          }));
    const union: Shape = { kind: 'union', members: shapes };
    cache.set(type, union);
    for (const member of rest) shapes.push(shapeOf(checker, member, cache));
    // (a union of one, once `undefined` is gone, is that one)
    if (shapes.length === 1) return shapes[0] as Shape;
    return union;
  }
  if (type.isStringLiteral() || type.isNumberLiteral())
    return { kind: 'literal', value: type.value };
  if (f & ts.TypeFlags.BooleanLiteral) {
    return { kind: 'literal', value: checker.typeToString(type) === 'true' };
  }
  if (f & ts.TypeFlags.StringLike) return { kind: 'string' };
  if (f & ts.TypeFlags.NumberLike || f & ts.TypeFlags.BigIntLike) return { kind: 'number' };
  if (f & ts.TypeFlags.BooleanLike) return { kind: 'boolean' };
  if (f & ts.TypeFlags.Null) return { kind: 'null' };
  if (type.isIntersection()) {
    // `string & {}` (a string, with the literals listed beside it) is a string
    const primitive = type.types.find((t) => !(t.flags & ts.TypeFlags.Object));
    if (primitive) return shapeOf(checker, primitive, cache);
  }
  if (f & ts.TypeFlags.Object || type.isIntersection()) {
    if (checker.isArrayType(type) || checker.isTupleType(type)) {
      const args = checker.getTypeArguments(type as ts.TypeReference);
      const array: { kind: 'array'; items: Shape } = { kind: 'array', items: { kind: 'unknown' } };
      cache.set(type, array);
      const items = args.map((arg) => shapeOf(checker, arg, cache));
      array.items = items.length === 1 ? (items[0] as Shape) : { kind: 'union', members: items };
      return array;
    }
    const object: ObjectShape = {
      kind: 'object',
      name: type.aliasSymbol?.name ?? type.getSymbol()?.name ?? checker.typeToString(type),
      props: new Map(),
    };
    cache.set(type, object);
    for (const prop of checker.getPropertiesOfType(type)) {
      object.props.set(prop.name, {
        shape: shapeOf(checker, checker.getTypeOfSymbol(prop), cache),
        optional: (prop.flags & ts.SymbolFlags.Optional) !== 0,
      });
    }
    const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
    if (index) object.index = shapeOf(checker, index.type, cache);
    return object;
  }
  return { kind: 'unknown' };
}

/** A step from a value into a part of it: a property, an array's item, a union's member. */
export type Step = { prop: string } | { item: true } | { member: number };

/** A literal a request field takes, and the way to it from the request's root. */
export interface LiteralSite {
  /** `messages[].content[].type`, ... */
  path: string;
  steps: Step[];
  value: string;
  /**
   * Whether the field takes these literals only (no other string): a made-up value is then
   * refused.
   */
  closed: boolean;
}

/** Whether a field's type lets a string through that is none of its literals. */
const takesAnyString = (shape: Shape): boolean =>
  shape.kind === 'string' ||
  (shape.kind === 'array' && takesAnyString(shape.items)) ||
  (shape.kind === 'union' && shape.members.some(takesAnyString));

/**
 * Every string literal of a request type, each where it is first met: depth first, required
 * fields before optional ones, every object type expanded once (a block type's literals are
 * tried in the first place it can be, not in each; two types alike, such as each tool's
 * `allowed_callers`, each in its own).
 */
export function literalSites(root: Shape): LiteralSite[] {
  const sites: LiteralSite[] = [];
  const seen = new Set<Shape>();
  const label = (steps: Step[]) =>
    steps
      .map((step) => ('prop' in step ? `.${step.prop}` : 'item' in step ? '[]' : ''))
      .join('')
      .replace(/^\./, '');
  const walk = (shape: Shape, steps: Step[], field: Shape = shape) => {
    if (shape.kind === 'literal') {
      if (typeof shape.value === 'string') {
        const closed = !takesAnyString(field);
        sites.push({ path: label(steps), steps, value: shape.value, closed });
      }
      return;
    }
    if (shape.kind === 'array') return walk(shape.items, [...steps, { item: true }], field);
    if (shape.kind === 'union') {
      shape.members.forEach((member, k) => {
        walk(member, [...steps, { member: k }], field);
      });
      return;
    }
    if (shape.kind !== 'object' || seen.has(shape)) return;
    seen.add(shape);
    const props = [...shape.props].sort(([, a], [, b]) => Number(a.optional) - Number(b.optional));
    for (const [name, prop] of props) walk(prop.shape, [...steps, { prop: name }]);
    if (shape.index) walk(shape.index, [...steps, { prop: '*' }]);
  };
  walk(root, []);
  return sites;
}
