/**
 * The simulator's one entry for the command line (DESIGN.md §3: in src/ only the CLI imports
 * sim/, and only through here): the Matching batch and its replay, the end-to-end (jobs)
 * batch, and what their timelines and summaries are drawn from. Everything else under sim/ is
 * the simulator's own: core/ (decisions, I/O gate and faults, turns, trace, parallel seeds,
 * the timeline page), matching/ and jobs/ (each workload's world, hosts, checkers, mutations,
 * swarm and timeline).
 */
export type { JobsBatchObserver, JobsBatchPlan, JobsBatchReport, JobsSeedOutcome } from './jobs/JobsSimulation.ts'
export { runJobsBatch } from './jobs/JobsSimulation.ts'
export { knownEngineFailures, knownFailingCheckersOn } from './jobs/KnownEngineFailures.ts'
export { type JobsTimelineData, renderJobsTimelineHtml } from './jobs/JobTimeline.ts'
export type { DeterminismCheck, FirstSeed, SeedOutcome, SimBatchObserver, SimBatchReport } from './matching/Simulation.ts'
export { hostIdsOf, runOneSeed, runSimBatch } from './matching/Simulation.ts'
export { type FailureCase, parseFailureCase, seedRunOf } from './matching/FailureCase.ts'
export type { SeedResult, SeedRun, SimStoreKind } from './matching/Simulation.ts'
export { describeOptions, type SwarmOptions, swarmOptions, type SwarmOverrides } from './matching/Swarm.ts'
export { RangeTimelineRecorder, renderTimelineHtml, type TimelineData } from './matching/RangeTimeline.ts'
