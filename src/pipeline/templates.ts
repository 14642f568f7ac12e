/**
 * Settings templates (design §6): a string that is exactly `{{ expr }}` takes
 * the expression's value (any type); `{{ expr }}` inside a longer string is
 * interpolated as text; nested objects and arrays are walked. The result is a
 * compact spec, which src/pipeline/inline.ts (`specJs`) turns into the program's code:
 *   {k:'x',i}      exact template: the value of expression i
 *   {k:'t',p:[..]} interpolated text: strings and expression indexes
 *   {k:'o',n:[keys],v:[specs]} / {k:'a',v:[specs]} objects and arrays holding templates
 *   {k:'l',v} / {k:'l',j} a literal (j: JSON text parsed afresh for each use)
 */
export type Spec =
  | { k: 'x'; i: number }
  | { k: 't'; p: (string | number)[] }
  | { k: 'o'; n: string[]; v: Spec[] }
  | { k: 'a'; v: Spec[] }
  | { k: 'l'; v?: unknown; j?: string };

const TEMPLATE = /\{\{([\s\S]*?)\}\}/g;

export type Template = { exact: string } | { parts: (string | { expr: string })[] } | null;

/** Parses one settings string; null when it holds no template. */
export function parseTemplate(text: string): Template {
  if (!text.includes('{{')) return null;
  const parts: (string | { expr: string })[] = [];
  let last = 0;
  for (const match of text.matchAll(TEMPLATE)) {
    if (match.index! > last) parts.push(text.slice(last, match.index));
    parts.push({ expr: match[1]!.trim() });
    last = match.index! + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  const exprs = parts.filter((p) => typeof p !== 'string');
  if (exprs.length === 0) return null;
  const nonBlank = parts.filter((p) => typeof p !== 'string' || p.trim() !== '');
  if (nonBlank.length === 1 && typeof nonBlank[0] !== 'string') return { exact: nonBlank[0]!.expr };
  return { parts };
}

/** An expression written bare (`a > 1`) or as a whole template (`{{ a > 1 }}`). */
export function expressionOf(text: string): string {
  const t = parseTemplate(text);
  if (t && 'exact' in t) return t.exact;
  return text.trim();
}

export function hasTemplate(value: unknown): boolean {
  if (typeof value === 'string') return parseTemplate(value) !== null;
  if (Array.isArray(value)) return value.some(hasTemplate);
  if (value !== null && typeof value === 'object') return Object.values(value).some(hasTemplate);
  return false;
}

export interface SpecOptions {
  /** Compiles an expression in the guest and returns its index. Throws on a syntax error. */
  compile(expression: string): number;
  /** Top-level keys whose strings are expressions even without braces (`condition`). */
  expressionKeys?: readonly string[];
  /** Top-level keys left as literal text (a script's `code`). */
  literalKeys?: readonly string[];
}

/** Builds the spec of a node's settings object. */
export function settingsSpec(settings: Record<string, unknown> | undefined, options: SpecOptions): Spec {
  const names: string[] = [];
  const values: Spec[] = [];
  for (const [key, value] of Object.entries(settings ?? {})) {
    names.push(key);
    if (options.literalKeys?.includes(key)) values.push(literal(value));
    else if (options.expressionKeys?.includes(key) && typeof value === 'string') values.push({ k: 'x', i: options.compile(expressionOf(value)) });
    else values.push(valueSpec(value, options.compile));
  }
  return { k: 'o', n: names, v: values };
}

function valueSpec(value: unknown, compile: (e: string) => number): Spec {
  if (typeof value === 'string') {
    const t = parseTemplate(value);
    if (!t) return { k: 'l', v: value };
    if ('exact' in t) return { k: 'x', i: compile(t.exact) };
    return { k: 't', p: t.parts.map((p) => (typeof p === 'string' ? p : compile(p.expr))) };
  }
  if (!hasTemplate(value)) return literal(value);
  if (Array.isArray(value)) return { k: 'a', v: value.map((v) => valueSpec(v, compile)) };
  const entries = Object.entries(value as Record<string, unknown>);
  return { k: 'o', n: entries.map(([k]) => k), v: entries.map(([, v]) => valueSpec(v, compile)) };
}

function literal(value: unknown): Spec {
  if (value !== null && typeof value === 'object') return { k: 'l', j: JSON.stringify(value) };
  return { k: 'l', v: value === undefined ? null : value };
}

const PATH_LIKE = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/;

/** A loop's `items`: names a context property (a dotted path is fine; a missing one runs nothing). Other text is an expression. */
export function itemsExpression(items: string): string {
  const source = expressionOf(items);
  if (!PATH_LIKE.test(source)) return source;
  const [first, ...rest] = source.split('.');
  return `(typeof ${first}==='undefined'?undefined:${[first, ...rest].join('?.')})`;
}
