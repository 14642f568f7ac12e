import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { runWith } from '../../src/pipeline/runner.js';
import { withoutTimes } from '../helpers/pipeline-outcome.js';
import { acquireModule, releaseModule } from '../../src/sandbox/pool.js';
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

describe('pipeline cases: compiled segments against the host walker alone (the oracle)', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const compiled = createFakeServices();
      const walked = createFakeServices();
      const inline = await runPipeline({ environment: 'client', ...c.options, services: compiled.services });
      const oracle = await runWith(
        { environment: 'client', ...c.options, services: walked.services },
        { acquire: acquireModule, release: releaseModule, walkOnly: true },
      );
      c.check(oracle, walked.calls);
      expect(strip(oracle)).toMatchSnapshot();
      expect(walked.calls).toMatchSnapshot();
      expect(strip(inline)).toEqual(strip(oracle));
      expect(compiled.calls).toEqual(walked.calls);
    });
  }
});
