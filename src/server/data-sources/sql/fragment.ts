import type { SqlValue } from '../../db/database.js';

/** A piece of SQL with its `?` parameters, in the order they appear in the text. */
export class Sql {
  constructor(
    readonly text: string,
    readonly params: readonly SqlValue[],
  ) {}
}

/** Tagged template: interpolated `Sql` is inlined, any other value becomes a `?` parameter. */
export function sql(strings: TemplateStringsArray, ...parts: (Sql | SqlValue)[]): Sql {
  let text = strings[0]!;
  const params: SqlValue[] = [];
  parts.forEach((part, i) => {
    if (part instanceof Sql) {
      text += part.text;
      params.push(...part.params);
    } else {
      text += '?';
      params.push(part);
    }
    text += strings[i + 1]!;
  });
  return new Sql(text, params);
}

/** Text without parameters (only for text the translator built itself: keywords, checked names, literals). */
export const raw = (text: string) => new Sql(text, []);

export function joinSql(items: readonly Sql[], separator: string): Sql {
  const params: SqlValue[] = [];
  for (const item of items) params.push(...item.params);
  return new Sql(items.map((item) => item.text).join(separator), params);
}

/** A SQL string literal (single quotes doubled). */
export const literal = (text: string) => raw(`'${text.replace(/'/g, "''")}'`);
