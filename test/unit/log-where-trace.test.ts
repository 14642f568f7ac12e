/** Which getLogs `where`s may read a record's trace (src/server/actions/logs.ts `namesTrace`): the others are answered from records read without it. */
import { describe, expect, it } from 'vitest';
import { namesTrace } from '../../src/server/actions/logs.js';

describe('namesTrace', () => {
  it('is false for paths beside the trace, at the top and in $and / $or / $nor', () => {
    expect(namesTrace({ 'data.result': 2, type: 'app.task.failed' })).toBe(false);
    expect(namesTrace({ $or: [{ 'data.result': { $gt: 1 } }, { $and: [{ 'data.duration': 3 }, { $nor: [{ 'data.traces': 1 }] }] }] })).toBe(false);
    expect(namesTrace({ 'data.tracer': 1, 'data.result.trace': 1 })).toBe(false);
  });

  it('is true for data, data.trace and below, wherever a logical operator holds them, and for other operators', () => {
    expect(namesTrace({ data: { result: 2 } })).toBe(true);
    expect(namesTrace({ 'data.trace': { $size: 2 } })).toBe(true);
    expect(namesTrace({ 'data.trace.0.package': 'loop' })).toBe(true);
    expect(namesTrace({ $or: [{ 'data.result': 1 }, { $and: [{ 'data.trace.package': 'x' }] }] })).toBe(true);
    expect(namesTrace({ $where: 'true' })).toBe(true);
    expect(namesTrace({ $and: { 'data.result': 1 } })).toBe(true);
  });
});
