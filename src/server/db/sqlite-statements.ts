import type BetterSqlite3 from 'better-sqlite3';

/** Prepares each SQL text once per connection, keeping the last 500 (the main connection's and each reader thread's). */
export function statementCache(db: BetterSqlite3.Database): (sql: string) => BetterSqlite3.Statement {
  const statements = new Map<string, BetterSqlite3.Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
      if (statements.size > 500) statements.delete(statements.keys().next().value!);
    }
    return statement;
  };
}
