/**
 * The one import of sift in the library: every where-like input is matched through src/filter/tester.ts,
 * which builds sift testers from the allow-listed operations only.
 *
 * sift's CommonJS build under Node ESM exposes its named exports only on `default`; bundlers and vitest
 * expose them directly. This picks whichever holds them.
 */
import * as siftNamespace from 'sift';

type Sift = typeof siftNamespace;
const candidate = siftNamespace as unknown as Sift & { default?: Sift };
export const sift: Sift = typeof candidate.createQueryTester === 'function' ? candidate : (candidate.default as Sift);
