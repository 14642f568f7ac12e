import { describe, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
// The same cases run in Chromium (test/browser/pipeline.test.ts), inside the engine's Web Worker.
import { cases, createFakeServices } from '../browser/pipeline-page/cases.mjs';

describe('pipeline cases (Node)', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const { services, calls } = createFakeServices();
      const outcome = await runPipeline({ environment: 'client', ...c.options, services });
      c.check(outcome, calls);
    });
  }
});
