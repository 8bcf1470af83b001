/**
 * Migration tests on PostgreSQL: upgrading from every earlier schema version with data in it,
 * re-applying on a migrated database, concurrent opens, and refusing a newer database.
 *
 * `dataAtVersion` must hold an entry for every migration: when 002 arrives, this file fails
 * until someone writes how data looks at version 2 and what must survive the upgrade to 3….
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshDatabase } from '../../../test/harness/database.ts'
import { makeTask } from '../../domain/Task.ts'
import type { JobStore } from '../jobs/JobStore.ts'
import { openSqlJobStore } from '../jobs/sql/SqlJobStore.ts'
import type { MembershipStore } from '../membership/MembershipStore.ts'
import type { Store } from '../queues/Store.ts'
import type { Driver } from './Driver.ts'
import { loadMigrations, migrate } from './Migrations.ts'
import { openSqlStore } from '../queues/sql/openSqlStore.ts'
import { makePgDriver } from './PgDriver.ts'
import { makeSchema, type Schema } from './Schema.ts'
import { openSqlMembershipStore } from '../membership/sql/SqlMembershipStore.ts'

interface VersionFixture {
  /** Writes rows with SQL valid at exactly this schema version. */
  seed(driver: Driver, schema: Schema): Promise<void>
  /** Checks, through the stores at the latest version, that the rows survived and still work. */
  verify(store: Store, membership: MembershipStore, jobs: JobStore): Promise<void>
}

const queue = { namespace: 'up', family: 'emails', type: 'workflow', partition: 0, version: null } as const
const storedTask = (jobId: string) => makeTask({ jobId, createdAtMs: 7 })

const dataAtVersion: Record<number, VersionFixture> = {
  1: {
    async seed(driver, schema) {
      await driver.query(
        `INSERT INTO ${schema.quoted}.task_queues (queue_key, namespace, family, task_type, partition, version, range_id, last_task_id, ack_levels, updated_at_ms)
         VALUES ('up/emails/workflow/0', 'up', 'emails', 'workflow', 0, NULL, 3, 5, '{"0": 2}', 100)`,
      )
      for (const id of [3, 4, 5]) {
        await driver.query(`INSERT INTO ${schema.quoted}.tasks (queue_key, task_id, subqueue, data) VALUES ('up/emails/workflow/0', $1, 0, $2::text::jsonb)`, [
          id,
          JSON.stringify(storedTask(`job-${id}`)),
        ])
      }
      await driver.query(`INSERT INTO ${schema.quoted}.task_queue_user_data (namespace, family, version, data, updated_at_ms) VALUES ('up', 'emails', 2, '{"v": [1]}', 100)`)
    },
    async verify(store) {
      expect(await store.inspect(queue)).toEqual({
        metadata: { key: queue, rangeId: 3, lastTaskId: 5, ackLevels: { 0: 2 }, updatedAtMs: 100 },
        storedRows: 3,
        storedRowsBySubqueue: { 0: 3 },
      })
      expect(await store.read({ key: queue, subqueue: 0, afterTaskId: 2, limit: 10 })).toEqual([3, 4, 5].map((taskId) => ({ taskId, task: storedTask(`job-${taskId}`) })))
      const { rangeId } = await store.acquire({ key: queue, nowMs: 200 })
      expect(rangeId).toBe(4)
      expect(await store.append({ key: queue, rangeId, tasks: [storedTask('new')], nowMs: 200 })).toEqual({ firstTaskId: 6, lastTaskId: 6 })
      expect(await store.getUserData({ namespace: 'up', family: 'emails' })).toEqual({ namespace: 'up', family: 'emails', version: 2, data: { v: [1] } })
    },
  },
  2: {
    async seed(driver, schema) {
      await dataAtVersion[1]?.seed(driver, schema)
      await driver.query(`INSERT INTO ${schema.quoted}.membership_hosts (host_id, last_seen_ms, expires_at_ms) VALUES ('host-up', 100, 5100)`)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[1]?.verify(store, membership, jobs)
      expect(await membership.liveHosts({ nowMs: 200 })).toEqual([{ hostId: 'host-up', lastSeenMs: 100, expiresAtMs: 5_100 }])
      expect(await membership.heartbeat({ hostId: 'host-up', nowMs: 300, ttlMs: 5_000 })).toEqual({ hostId: 'host-up', lastSeenMs: 300, expiresAtMs: 5_300 })
    },
  },
  3: {
    async seed(driver, schema) {
      await dataAtVersion[2]?.seed(driver, schema)
      await driver.query(
        `INSERT INTO ${schema.quoted}.jobs (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms)
         VALUES ('job-up', 'emails', 'pending', '{"to": "a@b"}', 2, 0, 3, 300000, 5000, 100, 100, 100)`,
      )
      await driver.query(
        `INSERT INTO ${schema.quoted}.dead_jobs (id, queue, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, last_error, died_at_ms)
         VALUES ('job-dead', 'emails', '1', 0, 3, 3, 300000, 5000, 50, 50, 'max attempts exceeded', 90)`,
      )
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[2]?.verify(store, membership, jobs)
      expect(await jobs.getJob({ queue: 'emails', id: 'job-up' })).toMatchObject({ state: 'pending', payload: { to: 'a@b' }, priority: 2, attempts: 0 })
      expect(await jobs.getJob({ queue: 'emails', id: 'job-dead' })).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded' })
      expect(await jobs.cancel({ queue: 'emails', id: 'job-up' })).toBe(true)
    },
  },
  4: {
    async seed(driver, schema) {
      await dataAtVersion[3]?.seed(driver, schema)
      await driver.query(
        `INSERT INTO ${schema.quoted}.jobs (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms,
           job_key, last_handler_error, last_handler_stack)
         VALUES ('job-keyed', 'emails', 'pending', '2', 0, 1, 3, 300000, 5000, 100, 150, 150, 'order-1', 'timeout', 'at send')`,
      )
      await driver.query(
        `INSERT INTO ${schema.quoted}.dead_jobs (id, queue, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, last_error, died_at_ms,
           job_key, last_handler_error)
         VALUES ('job-dead-keyed', 'emails', '3', 0, 3, 3, 300000, 5000, 50, 50, 'max attempts exceeded', 90, 'order-1', 'smtp 451')`,
      )
      await driver.query(
        `INSERT INTO ${schema.quoted}.job_schedules (name, spec, queue, payload, anchor_ms, last_fired_ms, revision, timezone) VALUES ('nightly', '0 2 * * *', 'emails', '{}', 0, NULL, 1, 'Europe/Paris')`,
      )
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[3]?.verify(store, membership, jobs)
      expect(await jobs.getJob({ queue: 'emails', id: 'job-keyed' })).toMatchObject({ key: 'order-1', lastHandlerError: 'timeout', lastHandlerStack: 'at send' })
      expect(await jobs.getJob({ queue: 'emails', id: 'job-dead-keyed' })).toMatchObject({ state: 'dead', key: 'order-1', lastHandlerError: 'smtp 451' })
      // The live job holds the key: a keyed enqueue returns it, and the dead one cannot come back yet.
      const again = { id: 'job-again', queue: 'emails', payload: 4, priority: 0, runAtMs: 200, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 1_000, backoffBaseMs: 0, deadLetterRetentionMs: null, key: 'order-1' }
      expect((await jobs.enqueue({ job: again, nowMs: 200 })).id).toBe('job-keyed')
      expect(await jobs.retryDead({ queue: 'emails', id: 'job-dead-keyed', nowMs: 200 })).toEqual({ kind: 'key-taken', liveId: 'job-keyed' })
      expect(await jobs.countJobs({ queue: 'emails' })).toEqual({ pending: 1, processing: 0, dead: 2 })
      expect(await jobs.listSchedules()).toEqual([{ name: 'nightly', spec: '0 2 * * *', queue: 'emails', payload: {}, anchorMs: 0, lastFiredMs: null, revision: 1, timezone: 'Europe/Paris' }])
    },
  },
  5: {
    // An index only (jobs_claim_head): the rows written before it are claimed straight from it.
    async seed(driver, schema) {
      await dataAtVersion[4]?.seed(driver, schema)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[4]?.verify(store, membership, jobs)
      expect((await jobs.claimDue({ queue: 'emails', nowMs: 200, claimTokens: ['t1', 't2'] })).map((job) => [job.id, job.claimToken])).toEqual([['job-keyed', 't1']])
    },
  },
  6: {
    // Two columns a claim fills: a row claimed before them is given back due now; one claimed
    // after, in the place it had.
    async seed(driver, schema) {
      await dataAtVersion[5]?.seed(driver, schema)
      await driver.query(
        `INSERT INTO ${schema.quoted}.jobs (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms,
           claimed_at_ms, claim_token, deadline_ms)
         VALUES ('job-claimed', 'reports', 'processing', '6', 0, 1, 3, 100000, 5000, 100, 100, 100100, 100, 'held', 100100)`,
      )
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[5]?.verify(store, membership, jobs)
      expect(await jobs.release({ claims: [{ id: 'job-claimed', claimToken: 'held' }, { id: 'job-keyed', claimToken: 't1' }], nowMs: 300 })).toEqual(['job-claimed', 'job-keyed'])
      expect(await jobs.getJob({ queue: 'reports', id: 'job-claimed' })).toMatchObject({ state: 'pending', attempts: 0, claimToken: null, deadlineMs: null })
      expect(await jobs.nextDueMs({ nowMs: 299, queues: ['reports'] })).toBe(300)
      expect(await jobs.nextDueMs({ nowMs: 149, queues: ['emails'] })).toBe(150)
      expect(await jobs.getJob({ queue: 'emails', id: 'job-keyed' })).toMatchObject({ state: 'pending', attempts: 1 })
    },
  },
  7: {
    // New tables and columns only: rows written before them read with no pause, no attempt
    // history and no progress, and a queue with such rows pauses and resumes.
    async seed(driver, schema) {
      await dataAtVersion[6]?.seed(driver, schema)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[6]?.verify(store, membership, jobs)
      expect(await jobs.getJob({ queue: 'emails', id: 'job-dead-keyed' })).toMatchObject({ attemptErrors: [], progress: null })
      expect(await jobs.queuePause({ queue: 'emails' })).toBeNull()
      expect(await jobs.pauseQueue({ queue: 'emails', nowMs: 300 })).toBe(true)
      const job = { id: 'job-paused', queue: 'emails', payload: 5, priority: 0, runAtMs: 300, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 1_000, backoffBaseMs: 0, deadLetterRetentionMs: null }
      await jobs.enqueue({ job, nowMs: 300 })
      expect(await jobs.claim({ id: 'job-paused', claimToken: 't3', nowMs: 300 })).toEqual({ kind: 'obsolete', reason: 'paused' })
      expect(await jobs.resumeQueue({ queue: 'emails', nowMs: 300 })).toBe(true)
    },
  },
  8: {
    // New columns only: a row written before them reads with no claims and no progress time, and
    // its next claim starts its claim history (a release before had none to take back).
    async seed(driver, schema) {
      await dataAtVersion[7]?.seed(driver, schema)
      await driver.query(
        `INSERT INTO ${schema.quoted}.jobs (id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms,
           progress, attempt_errors)
         VALUES ('job-timeline', 'exports', 'pending', '8', 0, 1, 3, 100000, 5000, 100, 100, 100, '{"done": 1}', '[{"attempt": 1, "error": "early", "stack": null, "atMs": 90}]')`,
      )
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[7]?.verify(store, membership, jobs)
      expect(await jobs.getJob({ queue: 'exports', id: 'job-timeline' })).toMatchObject({ claims: [], progress: { done: 1 }, progressAtMs: null, attemptErrors: [{ attempt: 1, error: 'early', atMs: 90 }] })
      expect(await jobs.claim({ id: 'job-timeline', claimToken: 't8', nowMs: 400 })).toMatchObject({ kind: 'claimed', job: { attempts: 2, claims: [{ attempt: 2, atMs: 400 }] } })
      expect(await jobs.getJob({ queue: 'reports', id: 'job-claimed' })).toMatchObject({ claims: [] })
    },
  },
  9: {
    // Indexes only, rebuilt over the rows already there: pending rows and a lapsed claim written
    // before them are claimed in claim order, counted, listed and found by the due-time driver.
    async seed(driver, schema) {
      await dataAtVersion[8]?.seed(driver, schema)
      const columns = 'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms, claimed_at_ms, claim_token, deadline_ms'
      await driver.query(
        `INSERT INTO ${schema.quoted}.jobs (${columns}) VALUES
           ('ix-low', 'indexed', 'pending', '1', 0, 0, 3, 1000, 0, 100, 100, 100, NULL, NULL, NULL),
           ('ix-high', 'indexed', 'pending', '2', 5, 0, 3, 1000, 0, 100, 200, 200, NULL, NULL, NULL),
           ('ix-lapsed', 'indexed', 'processing', '3', 0, 1, 3, 1000, 0, 100, 100, 150, 100, 'old', 150),
           ('ix-later', 'indexed', 'pending', '4', 0, 0, 3, 1000, 0, 100, 5000, 5000, NULL, NULL, NULL)`,
      )
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[8]?.verify(store, membership, jobs)
      expect(await jobs.countJobs({ queue: 'indexed' })).toEqual({ pending: 3, processing: 1, dead: 0 })
      expect((await jobs.listJobs({ queue: 'indexed', state: 'processing', limit: 10, afterId: null })).map((job) => job.id)).toEqual(['ix-lapsed'])
      expect((await jobs.listJobs({ queue: 'indexed', state: 'pending', limit: 2, afterId: 'ix-high' })).map((job) => job.id)).toEqual(['ix-later', 'ix-low'])
      expect(await jobs.nextDueMs({ nowMs: 300, queues: ['indexed'] })).toBe(5_000)
      const claimed = await jobs.claimDue({ queue: 'indexed', nowMs: 300, claimTokens: ['a', 'b', 'c', 'd'] })
      expect(claimed.map((job) => [job.id, job.claimToken, job.attempts])).toEqual([
        ['ix-high', 'a', 1],
        ['ix-low', 'b', 1],
        ['ix-lapsed', 'c', 2],
      ])
      expect(await jobs.countJobs({ queue: 'indexed' })).toEqual({ pending: 1, processing: 3, dead: 0 })
    },
  },
  10: {
    // A keyed row and its key's last pass, written by another engine before this store opened:
    // the key's next job continues from the stored pass (behind a new key and an unkeyed job),
    // and the keyed row keeps its place in claim order.
    async seed(driver, schema) {
      await dataAtVersion[9]?.seed(driver, schema)
      const columns = 'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms, fairness_key, fair_pass'
      await driver.query(`INSERT INTO ${schema.quoted}.jobs (${columns}) VALUES ('fair-a1', 'fair-up', 'pending', '1', 0, 0, 3, 1000, 0, 100, 100, 100, 'a', 100)`)
      await driver.query(`INSERT INTO ${schema.quoted}.fairness_passes (queue, fairness_key, last_pass) VALUES ('fair-up', 'a', 5000)`)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[9]?.verify(store, membership, jobs)
      const job = (id: string, fairnessKey?: string) => ({
        id, queue: 'fair-up', payload: id, priority: 0, runAtMs: 300, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 1000, backoffBaseMs: 0, deadLetterRetentionMs: null,
        ...(fairnessKey === undefined ? {} : { fairnessKey }),
      })
      await jobs.enqueue({ job: job('fair-a2', 'a'), nowMs: 300 })
      await jobs.enqueue({ job: job('fair-b1', 'b'), nowMs: 300 })
      await jobs.enqueue({ job: job('fair-plain'), nowMs: 300 })
      const claimed = await jobs.claimDue({ queue: 'fair-up', nowMs: 300, claimTokens: ['a', 'b', 'c', 'd'] })
      expect(claimed.map((claimedJob) => claimedJob.id)).toEqual(['fair-a1', 'fair-b1', 'fair-plain', 'fair-a2'])
    },
  },
  11: {
    // A key at its limit of 1, held by a claim another engine made before this store opened: the
    // key's pending job waits behind it, an unkeyed job does not, and the ack frees the slot.
    async seed(driver, schema) {
      await dataAtVersion[10]?.seed(driver, schema)
      const columns = 'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms, concurrency_key'
      await driver.query(
        `INSERT INTO ${schema.quoted}.jobs (${columns}, claim_token, claimed_at_ms, deadline_ms) VALUES ('conc-a', 'conc-up', 'processing', '1', 0, 1, 3, 100000, 0, 100, 100, 100100, 'k', 'tok', 100, 100100)`,
      )
      await driver.query(`INSERT INTO ${schema.quoted}.jobs (${columns}) VALUES ('conc-b', 'conc-up', 'pending', '2', 0, 0, 3, 100000, 0, 100, 100, 100, 'k')`)
      await driver.query(`INSERT INTO ${schema.quoted}.jobs (${columns}) VALUES ('conc-plain', 'conc-up', 'pending', '3', 0, 0, 3, 100000, 0, 100, 100, 100, NULL)`)
      await driver.query(`INSERT INTO ${schema.quoted}.concurrency_slots (queue, concurrency_key, held, concurrency_limit) VALUES ('conc-up', 'k', 1, 1)`)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[10]?.verify(store, membership, jobs)
      const first = await jobs.claimDue({ queue: 'conc-up', nowMs: 300, claimTokens: ['c1', 'c2'] })
      expect(first.map((job) => job.id)).toEqual(['conc-plain'])
      expect(await jobs.ack({ id: 'conc-a', claimToken: 'tok', nowMs: 300 })).toBe(true)
      const second = await jobs.claimDue({ queue: 'conc-up', nowMs: 300, claimTokens: ['c3', 'c4'] })
      expect(second.map((job) => job.id)).toEqual(['conc-b'])
    },
  },
  12: {
    // A queue-wide bucket another engine emptied at 200 (1 a second, burst 1): the queue's
    // pending job waits for the token of 1 200, which nextDueMs names, and a queue without a
    // bucket claims at once.
    async seed(driver, schema) {
      await dataAtVersion[11]?.seed(driver, schema)
      const columns = 'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, created_at_ms, run_at_ms, due_ms'
      await driver.query(`INSERT INTO ${schema.quoted}.jobs (${columns}) VALUES ('rate-a', 'rate-up', 'pending', '1', 0, 0, 3, 100000, 0, 100, 100, 100)`)
      await driver.query(`INSERT INTO ${schema.quoted}.jobs (${columns}) VALUES ('rate-plain', 'rate-plain-up', 'pending', '2', 0, 0, 3, 100000, 0, 100, 100, 100)`)
      await driver.query(
        `INSERT INTO ${schema.quoted}.rate_buckets (queue, per_key, rate_key, tokens, refilled_ms, next_token_ms, per_second, burst) VALUES ('rate-up', false, '', 0, 200, 1200, 1, 1)`,
      )
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[11]?.verify(store, membership, jobs)
      expect(await jobs.claimDue({ queue: 'rate-up', nowMs: 300, claimTokens: ['r1'] })).toEqual([])
      expect(await jobs.nextDueMs({ nowMs: 300, queues: ['rate-up'] })).toBe(1200)
      expect((await jobs.claimDue({ queue: 'rate-plain-up', nowMs: 300, claimTokens: ['r2'] })).map((job) => job.id)).toEqual(['rate-plain'])
      expect((await jobs.claimDue({ queue: 'rate-up', nowMs: 1200, claimTokens: ['r3'] })).map((job) => job.id)).toEqual(['rate-a'])
    },
  },
  13: {
    // A schedule registered before schedules had job keys (version 4's 'nightly'): it reads
    // without keys, registering it as it was changes nothing, and registering it with a
    // fairness key re-anchors it.
    async seed(driver, schema) {
      await dataAtVersion[12]?.seed(driver, schema)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[12]?.verify(store, membership, jobs)
      const nightly = { name: 'nightly', spec: '0 2 * * *', queue: 'emails', payload: {}, timezone: 'Europe/Paris' }
      expect(await jobs.putSchedule({ ...nightly, nowMs: 300 })).toEqual({ ...nightly, anchorMs: 0, lastFiredMs: null, revision: 1 })
      expect(await jobs.putSchedule({ ...nightly, fairnessKey: 'tenant', nowMs: 300 })).toEqual({ ...nightly, fairnessKey: 'tenant', anchorMs: 300, lastFiredMs: null, revision: 2 })
    },
  },
  14: {
    // Jobs enqueued before there were waiters: an enqueue that may go to a waiter finds none and
    // enqueues as before; once a worker registers, the next such enqueue is claimed for it.
    async seed(driver, schema) {
      await dataAtVersion[13]?.seed(driver, schema)
    },
    async verify(store, membership, jobs) {
      await dataAtVersion[13]?.verify(store, membership, jobs)
      const job = { id: 'job-to-waiter', queue: 'waited', payload: { n: 1 }, priority: 0, runAtMs: 400, expiresAtMs: null, maxAttempts: 3, visibilityTimeoutMs: 30_000, backoffBaseMs: 5_000, deadLetterRetentionMs: null }
      expect((await jobs.enqueue({ job, nowMs: 400, toWaiter: true })).state).toBe('pending')
      const queueKey = { namespace: 'jobs', family: 'waited', type: 'activity' as const, partition: 0, version: null }
      const { rangeId } = await store.acquire({ key: queueKey, nowMs: 400 })
      await jobs.addWaiters({ queue: 'waited', claimTokens: ['waiting'], hostId: 'host-up', untilMs: 5_000, nowMs: 400, fence: { queueKey, rangeId } })
      // The job enqueued first is claimed: nothing older stands before the next one.
      expect(await jobs.claimDue({ queue: 'waited', nowMs: 400, claimTokens: ['first'] })).toHaveLength(1)
      const handed = await jobs.enqueue({ job: { ...job, id: 'job-handed' }, nowMs: 500, toWaiter: true })
      expect(handed).toMatchObject({ state: 'processing', claimToken: 'waiting', handedTo: { hostId: 'host-up' } })
    },
  },
}

describe('migrations on PostgreSQL', () => {
  let connectionString: string
  const opened: Driver[] = []
  const driver = (): Driver => {
    const made = makePgDriver({ connectionString })
    opened.push(made)
    return made
  }
  beforeAll(async () => {
    connectionString = await freshDatabase('migrations')
  })
  afterAll(async () => {
    await Promise.all(opened.map((made) => made.close()))
  })

  it('has data fixtures for every schema version', () => {
    expect(Object.keys(dataAtVersion).map(Number)).toEqual(loadMigrations().map((migration) => migration.version))
  })

  for (const migration of loadMigrations()) {
    it(`upgrades from version ${migration.version} with data in it`, async () => {
      const schema = makeSchema(`upgrade_from_${migration.version}`)
      const setup = driver()
      expect((await migrate(setup, schema, { upTo: migration.version })).version).toBe(migration.version)
      await dataAtVersion[migration.version]?.seed(setup, schema)
      const store = await openSqlStore(driver(), { schema: schema.name })
      const membership = await openSqlMembershipStore(driver(), { schema: schema.name })
      const jobs = await openSqlJobStore(driver(), { schema: schema.name })
      await dataAtVersion[migration.version]?.verify(store, membership, jobs)
      await store.close()
      await membership.close()
    })
  }

  it('applies everything once on a fresh schema and nothing on a migrated one', async () => {
    const schema = makeSchema('reapply')
    const latest = loadMigrations().length
    expect(await migrate(driver(), schema)).toEqual({ applied: loadMigrations().map((migration) => migration.version), version: latest })
    expect(await migrate(driver(), schema)).toEqual({ applied: [], version: latest })
    const recorded = await driver().query<{ version: number; name: string }>(`SELECT version, name FROM ${schema.quoted}.migrations ORDER BY version`)
    expect(recorded.rows).toEqual(loadMigrations().map((migration) => ({ version: migration.version, name: migration.name })))
  })

  it('concurrent opens apply each migration exactly once', async () => {
    for (let round = 0; round < 5; round++) {
      const schema = makeSchema(`concurrent_${round}`)
      const reports = await Promise.all([1, 2, 3].map(() => migrate(driver(), schema)))
      const applied = reports.flatMap((report) => report.applied)
      expect(applied).toEqual(loadMigrations().map((migration) => migration.version))
      const count = await driver().query<{ count: string }>(`SELECT count(*) FROM ${schema.quoted}.migrations`)
      expect(Number(count.rows[0]?.count)).toBe(loadMigrations().length)
    }
  })

  it('refuses a database newer than this code', async () => {
    const schema = makeSchema('from_the_future')
    await migrate(driver(), schema)
    await driver().query(`INSERT INTO ${schema.quoted}.migrations (version, name) VALUES ($1, 'future')`, [loadMigrations().length + 1])
    await expect(migrate(driver(), schema)).rejects.toThrow(/newer than this Matchbox knows/)
    await expect(openSqlStore(driver(), { schema: schema.name })).rejects.toThrow(/newer than this Matchbox knows/)
  })
})
