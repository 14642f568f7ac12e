import { expect, it } from 'vitest';
import { run } from './data-sources.js';

it('data sources benchmark', async () => {
  const result = await run();
  console.log(`\n${result.name}`);
  console.table(result.rows);
  expect(result.rows).toHaveLength(3);
}, 300_000);
