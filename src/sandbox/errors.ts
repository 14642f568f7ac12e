/** The sandbox throws the engine's one failure class, defined in the contract (src/contract/pipeline-failure.ts). */
export { PipelineFailure } from '../contract/pipeline-failure.js';
