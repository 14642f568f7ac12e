/**
 * Translates the portable, SQLite-flavoured SQL of the stores and migrations
 * (see database.ts) to PostgreSQL. One pass over a token stream that knows
 * string literals, quoted identifiers and comments, so nothing inside them is
 * touched:
 *
 * - `?` placeholders become `$1, $2, …` (`?NNN` becomes `$NNN`);
 * - bare mixed-case identifiers (`AS organizationId`, `ORDER BY createdAt`) are
 *   quoted, since PostgreSQL folds unquoted names to lower case;
 * - backtick-quoted identifiers become double-quoted;
 * - DDL (`CREATE TABLE`, `ALTER TABLE`): `INTEGER PRIMARY KEY [AUTOINCREMENT]`
 *   becomes an identity `BIGINT` primary key, other `INTEGER` columns `BIGINT`
 *   (SQLite integers are 64-bit), `REAL` → `DOUBLE PRECISION`, `BLOB` →
 *   `BYTEA`, `WITHOUT ROWID` / `STRICT` table options are dropped;
 * - `INSERT OR IGNORE` → `INSERT … ON CONFLICT DO NOTHING` (before `RETURNING`);
 * - `LIMIT -1` → `LIMIT ALL`; `IFNULL(` → `COALESCE(`; `INSTR(` → `STRPOS(`; two-argument scalar
 *   `MAX(a, b)` / `MIN(a, b)` → `GREATEST` / `LEAST`.
 *
 * Constructs with no faithful translation (`INSERT OR REPLACE`, `REPLACE
 * INTO`, `COLLATE NOCASE`, SQLite date/JSON functions) are refused with an
 * error naming the construct, so they are fixed in the store instead of
 * misbehaving at run time.
 */

export interface TranslatedSql {
  text: string;
  /** Number of distinct placeholders. */
  params: number;
  /**
   * Set when the statement inserts explicit values into a table's `id` column:
   * the adapter then moves that table's identity sequence past the largest id,
   * as SQLite's rowid allocation would (`max(id) + 1`).
   */
  explicitIdTable?: string;
}

type TokenKind = 'word' | 'quoted' | 'string' | 'param' | 'comment' | 'space' | 'number' | 'punct';
interface Token {
  kind: TokenKind;
  text: string;
}

export class SqlTranslationError extends Error {
  constructor(message: string, sql: string) {
    super(`${message} (in: ${sql.length > 200 ? sql.slice(0, 200) + '…' : sql})`);
    this.name = 'SqlTranslationError';
  }
}

const isWordStart = (c: string) => /[A-Za-z_]/.test(c);
const isWordChar = (c: string) => /[A-Za-z0-9_$]/.test(c);

export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const start = i;
    if (c === "'") {
      i++;
      while (i < n) {
        if (sql[i] === "'") {
          if (sql[i + 1] === "'") i += 2;
          else break;
        } else i++;
      }
      if (i >= n) throw new SqlTranslationError('Unterminated string literal', sql);
      i++;
      tokens.push({ kind: 'string', text: sql.slice(start, i) });
    } else if (c === '"' || c === '`') {
      i++;
      while (i < n && sql[i] !== c) i++;
      if (i >= n) throw new SqlTranslationError('Unterminated quoted identifier', sql);
      i++;
      const inner = sql.slice(start + 1, i - 1);
      tokens.push({ kind: 'quoted', text: c === '`' ? `"${inner.replace(/"/g, '""')}"` : sql.slice(start, i) });
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < n && sql[i] !== '\n') i++;
      tokens.push({ kind: 'comment', text: sql.slice(start, i) });
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
      tokens.push({ kind: 'comment', text: sql.slice(start, i) });
    } else if (c === '?') {
      i++;
      while (i < n && /[0-9]/.test(sql[i]!)) i++;
      tokens.push({ kind: 'param', text: sql.slice(start, i) });
    } else if (isWordStart(c)) {
      while (i < n && isWordChar(sql[i]!)) i++;
      tokens.push({ kind: 'word', text: sql.slice(start, i) });
    } else if (/[0-9]/.test(c)) {
      while (i < n && /[0-9.eE]/.test(sql[i]!)) i++;
      tokens.push({ kind: 'number', text: sql.slice(start, i) });
    } else if (/\s/.test(c)) {
      while (i < n && /\s/.test(sql[i]!)) i++;
      tokens.push({ kind: 'space', text: sql.slice(start, i) });
    } else {
      i++;
      tokens.push({ kind: 'punct', text: c });
    }
  }
  return tokens;
}

const upper = (t: Token | undefined) => (t && t.kind === 'word' ? t.text.toUpperCase() : undefined);
const isMixedCase = (word: string) => /[a-z]/.test(word) && /[A-Z]/.test(word);

/** Index of the next token that is not space or comment, from `i` on. */
function next(tokens: Token[], i: number): number {
  while (i < tokens.length && (tokens[i]!.kind === 'space' || tokens[i]!.kind === 'comment')) i++;
  return i;
}

/** Index of the `)` matching the `(` at `open`, and the number of top-level commas in between. */
function matchParen(tokens: Token[], open: number): { close: number; commas: number } {
  let depth = 0;
  let commas = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== 'punct') continue;
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      depth--;
      if (depth === 0) return { close: i, commas };
    } else if (t.text === ',' && depth === 1) commas++;
  }
  return { close: tokens.length, commas };
}

const UNSUPPORTED_FUNCTIONS = new Set([
  'JSON_EXTRACT',
  'JSON_EACH',
  'STRFTIME',
  'DATETIME',
  'JULIANDAY',
  'GROUP_CONCAT',
  'LAST_INSERT_ROWID',
  'CHANGES',
  'TYPEOF',
]);

export function translateToPostgres(sql: string): TranslatedSql {
  const tokens = tokenize(sql);
  const first = next(tokens, 0);
  const firstWord = upper(tokens[first]);
  const secondWord = upper(tokens[next(tokens, first + 1)]);
  const isDdl =
    (firstWord === 'CREATE' && (secondWord === 'TABLE' || secondWord === 'TEMP' || secondWord === 'TEMPORARY')) ||
    (firstWord === 'ALTER' && secondWord === 'TABLE');
  const out: string[] = [];
  let paramCount = 0;
  let maxNumbered = 0;
  let insertOrIgnore = false;
  let explicitIdTable: string | undefined;
  let depth = 0;

  if (firstWord === 'REPLACE') throw new SqlTranslationError('REPLACE INTO has no PostgreSQL equivalent: use INSERT … ON CONFLICT (…) DO UPDATE', sql);
  if (firstWord === 'INSERT') {
    // INSERT [OR IGNORE] INTO <table> ( id , … )
    let i = next(tokens, first + 1);
    if (upper(tokens[i]) === 'OR') {
      const what = upper(tokens[next(tokens, i + 1)]);
      if (what !== 'IGNORE') throw new SqlTranslationError(`INSERT OR ${what} has no PostgreSQL equivalent: use INSERT … ON CONFLICT (…) DO UPDATE`, sql);
      insertOrIgnore = true;
      i = next(tokens, next(tokens, i + 1) + 1);
    }
    if (upper(tokens[i]) === 'INTO') {
      const table = next(tokens, i + 1);
      const open = next(tokens, table + 1);
      if (tokens[open]?.text === '(') {
        const { close } = matchParen(tokens, open);
        for (let k = open + 1; k < close; k++) {
          const t = tokens[k]!;
          if ((t.kind === 'word' && t.text.toLowerCase() === 'id') || (t.kind === 'quoted' && t.text === '"id"')) {
            explicitIdTable = tokens[table]!.text;
            break;
          }
        }
      }
    }
  }

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'param') {
      if (t.text.length > 1) {
        const n = Number(t.text.slice(1));
        maxNumbered = Math.max(maxNumbered, n);
        out.push(`$${n}`);
      } else out.push(`$${++paramCount}`);
      continue;
    }
    if (t.kind === 'punct') {
      if (t.text === '(') depth++;
      else if (t.text === ')') depth--;
      out.push(t.text);
      continue;
    }
    if (t.kind !== 'word') {
      out.push(t.text);
      continue;
    }
    const word = t.text.toUpperCase();
    const after = next(tokens, i + 1);
    if (i === first && word === 'INSERT' && insertOrIgnore) {
      // drop "OR IGNORE"
      out.push(t.text);
      i = next(tokens, next(tokens, i + 1) + 1);
      continue;
    }
    if (word === 'RETURNING' && depth === 0 && insertOrIgnore) {
      out.push('ON CONFLICT DO NOTHING ');
      insertOrIgnore = false;
      out.push(t.text);
      continue;
    }
    if (word === 'COLLATE' && upper(tokens[after]) === 'NOCASE')
      throw new SqlTranslationError('COLLATE NOCASE has no PostgreSQL equivalent: compare lower(x) instead', sql);
    if (tokens[after]?.text === '(' && UNSUPPORTED_FUNCTIONS.has(word)) throw new SqlTranslationError(`The SQLite function ${t.text}() is not portable`, sql);
    if (word === 'IFNULL' && tokens[after]?.text === '(') {
      out.push('COALESCE');
      continue;
    }
    if (word === 'INSTR' && tokens[after]?.text === '(') {
      out.push('STRPOS');
      continue;
    }
    if ((word === 'MAX' || word === 'MIN') && tokens[after]?.text === '(' && matchParen(tokens, after).commas > 0) {
      out.push(word === 'MAX' ? 'GREATEST' : 'LEAST');
      continue;
    }
    if (word === 'LIMIT' && tokens[after]?.text === '-' && tokens[after + 1]?.text === '1') {
      out.push('LIMIT ALL');
      i = after + 1;
      continue;
    }
    if (isDdl) {
      if (word === 'INTEGER' && upper(tokens[after]) === 'PRIMARY' && upper(tokens[next(tokens, after + 1)]) === 'KEY') {
        out.push('BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY');
        i = next(tokens, after + 1);
        const auto = next(tokens, i + 1);
        if (upper(tokens[auto]) === 'AUTOINCREMENT') i = auto;
        continue;
      }
      if (word === 'AUTOINCREMENT') continue;
      if (word === 'INTEGER' || word === 'INT') {
        out.push('BIGINT');
        continue;
      }
      if (word === 'REAL' || word === 'DOUBLE' || word === 'FLOAT') {
        out.push('DOUBLE PRECISION');
        if (word === 'DOUBLE' && upper(tokens[after]) === 'PRECISION') i = after;
        continue;
      }
      if (word === 'BLOB') {
        out.push('BYTEA');
        continue;
      }
      if (depth === 0 && word === 'WITHOUT' && upper(tokens[after]) === 'ROWID') {
        i = after;
        continue;
      }
      if (depth === 0 && word === 'STRICT') continue;
    }
    out.push(isMixedCase(t.text) ? `"${t.text}"` : t.text);
  }
  if (insertOrIgnore) {
    // No RETURNING: append before any trailing whitespace, comment or semicolon.
    let end = out.length;
    while (end > 0 && (/^\s*$/.test(out[end - 1]!) || out[end - 1] === ';' || out[end - 1]!.startsWith('--'))) end--;
    out.splice(end, 0, ' ON CONFLICT DO NOTHING');
  }
  if (paramCount > 0 && maxNumbered > 0) throw new SqlTranslationError('Mixing ? and ?NNN placeholders is not supported', sql);
  const text = out.join('');
  return explicitIdTable ? { text, params: paramCount || maxNumbered, explicitIdTable } : { text, params: paramCount || maxNumbered };
}

/** The identity sequence of `table`'s `id` column, or null (then explicit ids need no care). */
export function identitySequenceSql(table: string): { text: string; values: string[] } {
  return { text: "SELECT pg_get_serial_sequence($1, 'id') AS seq", values: [table.startsWith('"') ? table : table.toLowerCase()] };
}

/** SQL that moves the sequence `$1` of `table` past its largest id, never backwards; run after explicit-id inserts. */
export function syncIdentitySql(table: string): string {
  return `SELECT setval($1::regclass, GREATEST((SELECT MAX(id) FROM ${table}), pg_sequence_last_value($1::regclass)))`;
}
