import * as siftNamespace from 'sift';

/**
 * sift's CommonJS build under Node ESM exposes its named exports only on `default`; bundlers and vitest
 * expose them directly. This picks whichever holds them.
 */
type Sift = typeof siftNamespace;
const candidate = siftNamespace as unknown as Sift & { default?: Sift };
export const sift: Sift = typeof candidate.createQueryTester === 'function' ? candidate : (candidate.default as Sift);
