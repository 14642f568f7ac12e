import { expect, test } from 'vitest';
import type { HostServices, PipelineNode } from '../../src/contract/pipeline.js';
import { runPipeline } from '../../src/pipeline/index.js';

/**
 * The engine defines context properties with a descriptor of its own that has no prototype (src/sandbox/guest.ts
 * `put`): a script that puts `get`, `set` or `value` on Object.prototype does not break the nodes after it in its run
 * (with a descriptor literal, every later `set` failed with "Invalid property descriptor").
 */
const F = (name: string) => `com.client.function.${name}`;
const services: HostServices = { dataSources: { connect: () => ({}) as never }, notifications: { create: async () => ({}) } };

test('a run whose script pollutes Object.prototype with descriptor keys still sets, merges and loops', async () => {
  const functions: PipelineNode[] = [
    {
      functionPackage: F('script'),
      settings: {
        code: [
          'Object.prototype.get = function () { return "hijacked" };',
          'Object.prototype.set = function () {};',
          'Object.prototype.value = "hijacked";',
          'Object.prototype.writable = false;',
          'return { fromScript: 1 };',
        ].join('\n'),
      },
    },
    { functionPackage: F('set'), settings: { a: '{{ start + 1 }}', total: 0 } },
    { type: 'loop', items: '[1, 2, 3]', functions: [{ functionPackage: F('set'), settings: { total: '{{ total + currentItem }}' } }] } as PipelineNode,
    { functionPackage: F('return'), settings: { value: '{{ { a, total, fromScript, start } }}' } },
  ];
  const outcome = await runPipeline({ environment: 'client', services, functions, payload: { start: 41 } });
  expect(outcome.ok ? outcome.result : outcome.error).toEqual({ a: 42, total: 6, fromScript: 1, start: 41 });
});
