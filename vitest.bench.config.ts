import { defineConfig } from 'vitest/config';

/** `npm run bench`: benchmark files print their tables (ratios against baselines measured in the same run). */
export default defineConfig({
  test: {
    include: ['test/bench/**/*.bench.ts'],
    environment: 'node',
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
