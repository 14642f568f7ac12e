import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { withoutTimes } from '../helpers/pipeline-outcome.js';
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

const strip = withoutTimes;

/**
 * Each case against its recorded outcome and host calls (the snapshots: what the host walker, the engine's former
 * second path and its oracle until it was deleted, gave for it).
 */
describe('pipeline cases: the recorded outcomes', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const compiled = createFakeServices();
      const inline = await runPipeline({ environment: 'client', ...c.options, services: compiled.services });
      expect(strip(inline)).toMatchSnapshot();
      expect(compiled.calls).toMatchSnapshot();
    });
  }
});
