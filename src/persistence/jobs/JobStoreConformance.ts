/**
 * JobStoreConformance — the one conformance suite of the JobStore contract (JobStore.ts),
 * written once and bound to every job store by a test file in `test/` (memory, embedded,
 * postgres). A change of semantics starts as a change here. The parts:
 * - conformance/JobLifecycleConformance.ts — enqueue, claim, the validity predicate, ack,
 *   heartbeat, retry, fail, cancel, ackBatch, reclaim and the reclaim-vs-ack race;
 * - conformance/JobRulesConformance.ts — the rules of domain/JobRules.ts at their exact edges
 *   (runAt, deadline, expiresAt == now), each case checked against the domain functions too;
 * - conformance/JobExpiryConformance.ts — the exhaustion rule, sweepExpired, retention;
 * - conformance/JobDeliveryConformance.ts — due times, reservation, claim order, deliverability;
 * - conformance/JobScheduleConformance.ts — schedules, the fenced lease, firing;
 * - conformance/JobAdminConformance.ts — keys, counts and pages by state, retrying dead jobs;
 * - conformance/JobBatchConformance.ts — claimMany and ackMany, judged claim by claim;
 * - conformance/JobEnqueueManyConformance.ts — enqueueMany, all or nothing, keys as enqueue keeps them;
 * - conformance/JobInputConformance.ts — the same InvalidInput for the same bad input;
 * - conformance/JobFenceConformance.ts — claims fenced by a physical queue's range;
 * - conformance/JobReleaseConformance.ts — release: a claim given back, the job in its place again;
 * - conformance/JobPauseConformance.ts — paused queues: nothing claimed, resumed due again;
 * - conformance/JobHistoryConformance.ts — every attempt's error (bounded) and the progress value;
 * - conformance/JobFairnessConformance.ts — fairness keys: weighted stride order, FIFO within a key.
 * - conformance/JobConcurrencyConformance.ts — per-key concurrency limits: held by every claim, across two stores, freed by every exit from processing.
 * - conformance/JobRateLimitConformance.ts — rate limits: token buckets per queue and per fairness key, taken by every claim, across two stores, by the callers' clocks.
 * - conformance/JobWaiterConformance.ts — the hand-over at enqueue to a claim waiting on another engine: fenced, first come first served, never past an older job.
 *
 * The suite opens one job store — with the Matching store beside it, whose acquires move the
 * ranges claims are fenced by — through the binding's `open` before its tests and closes it after;
 * tests isolate themselves with fresh queue names (conformance/JobFixture.ts).
 *
 * Does not: test the public API or delivery through Matching (test/jobs*.test.ts do).
 */
import { afterAll, beforeAll, describe } from 'vitest'
import { seedFromEntropy } from '../../kernel/Random.ts'
import { describeJobAdminConformance } from './conformance/JobAdminConformance.ts'
import { describeJobBatchConformance } from './conformance/JobBatchConformance.ts'
import { describeJobEnqueueManyConformance } from './conformance/JobEnqueueManyConformance.ts'
import { describeJobDeliveryConformance } from './conformance/JobDeliveryConformance.ts'
import { describeJobExpiryConformance } from './conformance/JobExpiryConformance.ts'
import { makeJobFixture } from './conformance/JobFixture.ts'
import { describeJobInputConformance } from './conformance/JobInputConformance.ts'
import { describeJobLifecycleConformance } from './conformance/JobLifecycleConformance.ts'
import { describeJobRulesConformance } from './conformance/JobRulesConformance.ts'
import { describeJobScheduleConformance } from './conformance/JobScheduleConformance.ts'
import { describeJobFairnessConformance } from './conformance/JobFairnessConformance.ts'
import { describeJobConcurrencyConformance } from './conformance/JobConcurrencyConformance.ts'
import { describeJobRateLimitConformance } from './conformance/JobRateLimitConformance.ts'
import { describeJobFenceConformance } from './conformance/JobFenceConformance.ts'
import { describeJobReleaseConformance } from './conformance/JobReleaseConformance.ts'
import { describeJobPauseConformance } from './conformance/JobPauseConformance.ts'
import { describeJobHistoryConformance } from './conformance/JobHistoryConformance.ts'
import { describeJobWaiterConformance } from './conformance/JobWaiterConformance.ts'
import type { Store } from '../queues/Store.ts'
import type { JobStore } from './JobStore.ts'

/** What a binding opens: the job store under test and the Matching store composed with it. */
export interface JobStoresUnderTest {
  readonly jobStore: JobStore
  /** Shares the job store's physical queues (one database, or the memory store it reads ranges of). */
  readonly store: Pick<Store, 'acquire'>
  /** A second job store on the same data through its own connections, as another engine's; absent: the store itself. */
  readonly peer?: JobStore
  /** Closes what the binding opened besides the job store and its peer (which the suite closes). */
  readonly close?: () => Promise<void>
}

/**
 * Registers `JobStore conformance: ${name}` against the store `open` returns (called once; the
 * store is closed after the last test). `seed` names this run's queues and seeds its properties
 * (default: `SIM_SEED`, else drawn).
 */
export function describeJobStoreConformance(name: string, open: () => Promise<JobStoresUnderTest>, options: { readonly seed?: number } = {}): void {
  // SIM_SEED replays a printed seed, as the Matching store's suite does.
  const fromEnv = process.env.SIM_SEED === undefined || process.env.SIM_SEED === '' ? undefined : Number(process.env.SIM_SEED)
  const seed = options.seed ?? fromEnv ?? (seedFromEntropy() >>> 0) % 2 ** 31
  describe(`JobStore conformance: ${name}`, () => {
    let opened: JobStoresUnderTest | undefined
    const stores = (): JobStoresUnderTest => {
      if (opened === undefined) throw new Error(`JobStore conformance: ${name}: the store is not open (did open() fail?)`)
      return opened
    }
    const fixture = makeJobFixture(
      name,
      () => stores().jobStore,
      seed,
      () => stores().store,
      () => stores().peer ?? stores().jobStore,
    )
    beforeAll(async () => {
      opened = await open()
    })
    afterAll(async () => {
      await opened?.jobStore.close()
      await opened?.peer?.close()
      await opened?.close?.()
    })
    describeJobLifecycleConformance(fixture)
    describeJobRulesConformance(fixture)
    describeJobExpiryConformance(fixture)
    describeJobDeliveryConformance(fixture)
    describeJobScheduleConformance(fixture)
    describeJobAdminConformance(fixture)
    describeJobBatchConformance(fixture)
    describeJobEnqueueManyConformance(fixture)
    describeJobInputConformance(fixture)
    describeJobPauseConformance(fixture)
    describeJobHistoryConformance(fixture)
    describeJobFenceConformance(fixture)
    describeJobReleaseConformance(fixture)
    describeJobFairnessConformance(fixture)
    describeJobConcurrencyConformance(fixture)
    describeJobRateLimitConformance(fixture)
    describeJobWaiterConformance(fixture)
  })
}
