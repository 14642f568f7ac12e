/** Waiting helpers shared by the integration tests. */

/** Polls `check` every 25 ms until it gives a truthy value (returned); throws after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The error a promise rejects with; throws when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}
