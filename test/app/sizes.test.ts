import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Issue 41: a source file a newcomer can read and a function that fits a screen or two. The
 * lines of each file in src/, and of each function (its whole text, the functions inside it
 * included), measured with the TypeScript compiler's parser.
 */
const MAX_FILE_LINES = 800;
const MAX_FUNCTION_LINES = 120;

const SRC = join(import.meta.dirname, '../../src');

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });

/** What a function is called where it is made. */
function nameOf(node: ts.SignatureDeclaration, file: ts.SourceFile): string {
  if (node.name) return node.name.getText(file);
  const parent = node.parent;
  if (
    (ts.isVariableDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)) &&
    parent.name
  ) {
    return parent.name.getText(file);
  }
  if (ts.isCallExpression(parent)) {
    const first = parent.arguments[0];
    const label = first && ts.isStringLiteral(first) ? `('${first.text}')` : '';
    return `${parent.expression.getText(file)}${label}`;
  }
  return '(anonymous)';
}

interface Measured {
  file: string;
  lines: number;
  functions: { name: string; lines: number }[];
}

function measure(path: string, text = readFileSync(path, 'utf8')): Measured {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (at: number) => file.getLineAndCharacterOfPosition(at).line;
  const functions: Measured['functions'] = [];
  const visit = (node: ts.Node, outer: string[]) => {
    let inside = outer;
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      inside = [...outer, nameOf(node, file)];
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(file)) + 1;
      functions.push({ name: inside.join(' > '), lines });
    }
    ts.forEachChild(node, (child) => visit(child, inside));
  };
  visit(file, []);
  return {
    file: relative(join(SRC, '..'), path).split('\\').join('/'),
    lines: lineOf(text.length) + 1,
    functions,
  };
}

const measured = sources(SRC).map((path) => measure(path));

describe('source sizes', () => {
  it(`no file in src/ is over ${MAX_FILE_LINES} lines`, () => {
    const over = measured
      .filter((m) => m.lines > MAX_FILE_LINES)
      .map((m) => `${m.file} (${m.lines} lines)`);
    expect(over).toEqual([]);
  });

  it(`no function in src/ is over ${MAX_FUNCTION_LINES} lines`, () => {
    const over = measured.flatMap((m) =>
      m.functions
        .filter((f) => f.lines > MAX_FUNCTION_LINES)
        .map((f) => `${m.file}: ${f.name} (${f.lines} lines)`),
    );
    expect(over).toEqual([]);
  });

  it('measures a function with the functions inside it, by the name it is made under', () => {
    const text = [
      'export function outer() {',
      '  const inner = () => {',
      '    return 1;',
      '  };',
      "  app.post('/x', async () => 2);",
      '  return [inner, function () {}];',
      '}',
      '',
    ].join('\n');
    expect(measure(join(SRC, 'example.ts'), text)).toEqual({
      file: 'src/example.ts',
      lines: 8,
      functions: [
        { name: 'outer', lines: 7 },
        { name: 'outer > inner', lines: 3 },
        { name: "outer > app.post('/x')", lines: 1 },
        { name: 'outer > (anonymous)', lines: 1 },
      ],
    });
  });
});
