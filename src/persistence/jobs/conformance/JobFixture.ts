/**
 * JobFixture — what every part of the JobStore conformance suite shares: the store under test,
 * fresh queue names and job ids, a job builder, and a claim helper.
 *
 * Isolation: a binding opens one store for the whole suite (PGlite is slow to open), so no test
 * may rely on an empty store. Every test works in queues nobody else uses (a suite token drawn
 * once per run plus a counter) and scopes the due-time operations to its own queues.
 *
 * Does not: open or close stores (JobStoreConformance.ts does).
 */
import { expect } from 'vitest'
import type { Store } from '../../queues/Store.ts'
import type { QueueKey } from '../../../domain/QueueKey.ts'
import type { ClaimFence, JobRecord, JobStore, NewJob } from '../JobStore.ts'

/** Shared state and tools of one conformance run. */
export interface JobFixture {
  readonly name: string
  readonly seed: number
  store(): JobStore
  /** A second store on the same data, as another engine's pool would be (the store itself when the binding has none). */
  peer(): JobStore
  /** The Matching store beside it: its acquires move the ranges claims are fenced by. */
  queues(): Pick<Store, 'acquire'>
  /** A queue name no other test uses. */
  queue(label: string): string
  /** A job id no other test uses. */
  id(label: string): string
  /** A valid job of `queue` (defaults: priority 0, runAt 1000, no expiry, 3 attempts, 30 s visibility). */
  job(queue: string, overrides?: Partial<NewJob>): NewJob
  /** Enqueues a job at `nowMs` and claims it there; returns the claimed record. */
  claimed(queue: string, nowMs: number, overrides?: Partial<NewJob>, claimToken?: string): Promise<JobRecord>
}

/** Builds a fixture over a store getter. */
/** A pending job `id` of `queue` with the fixtures' defaults (due at 1,000, 3 attempts, 30 s visibility), and `overrides`. */
export function newJobOf(id: string, queue: string, overrides: Partial<NewJob> = {}): NewJob {
  return { id, queue, payload: null, priority: 0, runAtMs: 1_000, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 30_000, backoffBaseMs: 5_000, deadLetterRetentionMs: null, ...overrides }
}

export function makeJobFixture(
  name: string,
  store: () => JobStore,
  seed: number,
  queues: () => Pick<Store, 'acquire'> = () => {
    throw new Error(`${name}: this fixture has no Matching store to acquire queues with`)
  },
  peer: () => JobStore = store,
): JobFixture {
  const token = (seed >>> 0).toString(36)
  let counter = 0
  const fixture: JobFixture = {
    name,
    seed,
    store,
    peer,
    queues,
    queue: (label) => `jobconf-${token}-${++counter}-${label}`,
    id: (label) => `job-${token}-${++counter}-${label}`,
    job: (queue, overrides = {}) => newJobOf(fixture.id('j'), queue, { payload: { n: counter }, ...overrides }),
    async claimed(queue, nowMs, overrides = {}, claimToken = fixture.id('token')) {
      const job = await store().enqueue({ job: fixture.job(queue, { runAtMs: nowMs, ...overrides }), nowMs })
      const outcome = await store().claim({ id: job.id, claimToken, nowMs })
      if (outcome.kind !== 'claimed') return expect.fail(`claim of a fresh job answered ${JSON.stringify(outcome)}`)
      return outcome.job
    },
  }
  return fixture
}

/**
 * A job queue of `fixture` whose physical queue is acquired once: its owner's fence, and
 * `takeOver`, another owner's acquire, after which `fence` is stale (answers the new range id).
 */
export async function ownedQueue(fixture: JobFixture, label: string): Promise<{ readonly queue: string; readonly queueKey: QueueKey; readonly fence: ClaimFence; readonly takeOver: () => Promise<number> }> {
  const queue = fixture.queue(label)
  const queueKey: QueueKey = { namespace: 'jobs', family: queue, type: 'activity', partition: 0, version: null }
  const { rangeId } = await fixture.queues().acquire({ key: queueKey, nowMs: 500 })
  const takeOver = async () => (await fixture.queues().acquire({ key: queueKey, nowMs: 600 })).rangeId
  return { queue, queueKey, fence: { queueKey, rangeId }, takeOver }
}
