import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Every ```ts block of README.md and docs/*.md is type-checked against the package's source types, with the
 * repo's tsconfig (strict): `in-app-runtime` is src/index.ts and `in-app-runtime/server` src/server/index.ts.
 * Each block is a module of its own (top-level await works; its names do not leak into the next block).
 * Blocks are fragments: the names they use without defining them are declared once in PRELUDE.
 */
const ROOT = resolve(__dirname, '../..');

const PRELUDE = `
/** README §2 onwards: the client created in the npm example. */
declare const client: import('in-app-runtime').Client;
/** The script tag's global (README §4). */
declare const Client: import('in-app-runtime').Client;
/** docs/data-sources.md: the server-side service example. */
declare const ctx: import('./src/server/context.js').ServerContext;
declare const appId: number;
declare const organizationId: number;
`;

interface Block {
  /** Path relative to the repo root, e.g. `README.md`. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
}

/** The ```ts blocks of a Markdown text (indented ones too, as in lists), with their indentation removed. */
function tsBlocks(file: string, markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```ts\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(Math.min(indent, lines[i]!.search(/\S|$/))));
    if (i >= lines.length) throw new Error(`${file}:${start + 1}: unclosed \`\`\`ts block`);
    blocks.push({ file, line: start + 1, code: body.join('\n') });
  }
  return blocks;
}

/** Type-checks the blocks in one program; answers `file:line: TSxxxx message` for each error. */
function typeCheck(blocks: Block[]): string[] {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    paths: { 'in-app-runtime': [join(ROOT, 'src/index.ts')], 'in-app-runtime/server': [join(ROOT, 'src/server/index.ts')] },
  };
  // Virtual files at the repo root, so a block's relative import (`./src/…`) resolves as the docs mean it.
  const virtual = new Map<string, { text: string; block?: Block }>();
  virtual.set(join(ROOT, '__doc_prelude.d.ts'), { text: PRELUDE });
  blocks.forEach((block, n) =>
    virtual.set(join(ROOT, `__doc_${n}_${block.file.replace(/[^A-Za-z0-9]/g, '_')}_${block.line}.ts`), { text: `${block.code}\nexport {};\n`, block }),
  );
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => virtual.has(f) || fileExists.call(host, f);
  host.readFile = (f) => virtual.get(f)?.text ?? readFile.call(host, f);
  host.getSourceFile = (f, language, ...rest) => {
    const v = virtual.get(f);
    return v ? ts.createSourceFile(f, v.text, language) : getSourceFile.call(host, f, language, ...rest);
  };
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
  const errors: string[] = [];
  for (const [path, { block }] of virtual) {
    const source = program.getSourceFile(path)!;
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    for (const d of diagnostics) {
      const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
      const where = block ? `${block.file}:${block.line + 1 + line}` : `prelude:${line + 1}`;
      errors.push(`${where}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
  }
  return errors;
}

describe('code blocks of the docs', () => {
  it('every ```ts block of README.md and docs/*.md type-checks against the source types', () => {
    const files = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const blocks = files.flatMap((file) => tsBlocks(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(blocks.filter((b) => b.file === 'README.md').length).toBeGreaterThanOrEqual(4);
    // A canary checked in the same program: errors are reported at the Markdown line of the block.
    const canary: Block = { file: 'canary.md', line: 10, code: "const ok: string = 'a';\nconst wrong: number = ok;" };
    const errors = typeCheck([...blocks, canary]);
    expect(errors.filter((e) => e.startsWith('canary.md:'))).toEqual(["canary.md:12: TS2322 Type 'string' is not assignable to type 'number'."]);
    expect(errors.filter((e) => !e.startsWith('canary.md:'))).toEqual([]);
  }, 120_000);

  it('finds indented blocks and reports unclosed ones', () => {
    expect(tsBlocks('x.md', 'text\n\n  ```ts\n  const a = 1;\n    a;\n  ```\n')).toEqual([{ file: 'x.md', line: 3, code: 'const a = 1;\n  a;' }]);
    expect(() => tsBlocks('x.md', '```ts\nconst a = 1;\n')).toThrow('x.md:1: unclosed');
  });
});
