import type { HostServices, RunOutcome, RunPipelineOptions } from '../../../src/contract/pipeline.js';

export interface PipelineCase {
  name: string;
  options: Omit<RunPipelineOptions, 'services' | 'environment'> & { environment?: 'server' | 'client' };
  check(outcome: RunOutcome, calls: unknown[][]): void;
}
export const cases: PipelineCase[];
export function createFakeServices(): { services: HostServices; calls: unknown[][] };
