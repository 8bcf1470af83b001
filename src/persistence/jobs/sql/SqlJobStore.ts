/**
 * SqlJobStore — the JobStore contract (persistence/jobs/JobStore.ts) written once over the SQL
 * `Driver` seam, so the embedded (PGlite) and postgres (`pg`) stores run the same statements
 * (jobSql.ts, scheduleSql.ts) on the tables of migrations 003 and 004.
 *
 * Owns: validating inputs (JobInput.ts) before any SQL, one statement per transition, decoding
 * rows with assertions after read (jobRows.ts), the one multi-statement transaction
 * (`fireSchedule`: fence, compare-and-set, then its occurrences through enqueueMany's insert;
 * the admin operations live in SqlJobAdmin.ts), and
 * mapping failures into the catalogue exactly as the Matching Store does (`toStoreError`).
 *
 * The inserts (`enqueue`, `enqueueMany`, with or without the caller's transaction) live in
 * SqlJobEnqueue.ts; pausing and resuming queues in SqlJobPauses.ts; the statements whose text depends on the call's shape, in jobTexts.ts.
 *
 * Head claims (`claimDue`, `ackAndClaimDue`) of a queue this store has not seen concurrency keys
 * or rate limits in run jobSql.ts's `keyless` form, without the admission steps (of the slots and
 * of the rate buckets, rateSql.ts); the first that answers the
 * queue keyed (it then claimed nothing) is run again in the `admit` form, which the store keeps
 * to for that queue (`makeKeyedQueues`). Claims by id always run under the guard.
 *
 * A fenced claim runs its statement's fenced form (claimFenceSql.ts says how one statement holds
 * the range); a statement answering no row at all was refused, and becomes `OwnershipLost`.
 * `claim`'s follow-up statements after a claim that did not happen (bury an exhausted job, park
 * a job refused for its concurrency key's limit or for its rate buckets' tokens, read why) claim nothing, so they are not fenced; `claimMany`'s judgement of a job its batch did not
 * claim is a fenced `claim`.
 *
 * Does not: migrate (openSqlJobStore does, through the shared migration runner), read a clock,
 * or retry.
 *
 * Length: past 400 lines (about 490) because each contract operation is a short method over one
 * statement, and the claim operations each carry their fenced branch beside the unfenced one;
 * split by operation, every file would re-read the same session and decoders.
 */
import { InvalidInput, OwnershipLost } from '../../../domain/errors.ts'
import { validateJson } from '../../../domain/Json.ts'
import { claimRefusal, deadReasonExhausted, deadReasonExpired } from '../../../domain/JobRules.ts'
import { assert } from '../../../kernel/assert.ts'
import { jobDueScanIntervalMs, keyedQueuesKnownMax } from '../../../kernel/Limits.ts'
import type { Driver } from '../../sql/Driver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { makeSqlSession, openMigrated, toStoreError } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import {
  checkClaimRef,
  checkClaims,
  checkCount,
  checkDurationMs,
  checkError,
  checkFence,
  checkJobRef,
  checkName,
  checkNewJob,
  checkProgress,
  checkQueues,
  checkSkipKeys,
  checkTokens,
  checkStack,
  checkTime,
  checkScheduleKeys,
  checkTimezone,
  scheduleKeyFields,
} from '../JobInput.ts'
import type { ClaimFence, ClaimOutcome, DueJob, JobState, JobStore } from '../JobStore.ts'
import { fenceRefusal, fenceValues } from './claimFenceSql.ts'
import { dueChannelOf } from '../../bus/Channels.ts'
import { claimedInOrder, decodeJob, decodeSchedule, nullableInteger } from './jobRows.ts'
import * as jobSql from './jobSql.ts'
import { makeJobTexts } from './jobTexts.ts'
import { makeSqlJobAdmin } from './SqlJobAdmin.ts'
import { insertMany, makeSqlJobEnqueue } from './SqlJobEnqueue.ts'
import { makeSqlJobPauses } from './SqlJobPauses.ts'
import * as scheduleSql from './scheduleSql.ts'

type Row = Record<string, unknown>

/** Makes a JobStore over an already migrated schema. `close` closes the driver (idempotent). */
export function makeSqlJobStore(driver: Driver, schema: Schema): JobStore {
  const dueChannel = dueChannelOf(schema.name)
  const texts = makeJobTexts(schema)
  const sql = {
    enqueueMany: jobSql.enqueueManySql(schema),
    enqueueManyFair: jobSql.enqueueManySql(schema, true),
    getJob: jobSql.getJobSql(schema),
    claim: jobSql.claimSql(schema),
    claimFenced: jobSql.claimSql(schema, true),
    claimKeyless: jobSql.claimKeylessSql(schema),
    claimKeylessFenced: jobSql.claimKeylessSql(schema, true),
    claimMany: jobSql.claimManySql(schema),
    claimManyFenced: jobSql.claimManySql(schema, true),
    claimRefused: jobSql.claimRefusedSql(schema),
    heartbeat: jobSql.heartbeatSql(schema),
    ack: jobSql.ackSql(schema),
    release: jobSql.releaseSql(schema),
    setProgress: jobSql.setProgressSql(schema),
    retry: jobSql.retrySql(schema),
    fail: jobSql.failSql(schema),
    cancel: jobSql.cancelSql(schema),
    sweepExpired: jobSql.sweepExpiredSql(schema),
    confirmDelivered: jobSql.confirmDeliveredSql(schema),
    releaseDelivered: jobSql.releaseDeliveredSql(schema),
    deliverableCount: jobSql.deliverableCountSql(schema),
    dueQueues: jobSql.dueQueuesSql(schema),
    putSchedule: scheduleSql.putScheduleSql(schema),
    deleteSchedule: scheduleSql.deleteScheduleSql(schema),
    getSchedule: scheduleSql.getScheduleSql(schema),
    listSchedules: scheduleSql.listSchedulesSql(schema),
    acquireLease: scheduleSql.acquireLeaseSql(schema),
    lockLease: scheduleSql.lockLeaseSql(schema),
    markFired: scheduleSql.markFiredSql(schema),
  }

  const keyedQueues = makeKeyedQueues()
  const session = makeSqlSession(driver)
  const write = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.write<Row>(operation, text, params)
  const read = (operation: string, text: string, params: ReadonlyArray<unknown>) => session.read<Row>(operation, text, params)
  const { validated } = session
  // Runs a claim statement in its fenced form when `fence` is given: its rows, or OwnershipLost
  // when it answered none (refused, nothing written).
  const claimWrite = async (operation: string, text: string, params: ReadonlyArray<unknown>, fence: ClaimFence | null): Promise<Row[]> => {
    const rows = await write(operation, text, params)
    if (fence !== null && rows.length === 0) throw await fenceRefusal(schema, fence, (refusalText, values) => read(operation, refusalText, values))
    return rows
  }

  const store: JobStore = {
    kind: driver.kind,

    ...makeSqlJobEnqueue(schema, session, dueChannel),
    ...makeSqlJobPauses(schema, session, dueChannel),

    async getJob(params) {
      const { queue, id } = validated('getJob', () => checkJobRef(params))
      const rows = await read('getJob', sql.getJob, [id, queue])
      assert(rows.length <= 1, `job ${id} is both live and dead`)
      return rows[0] === undefined ? null : decodeJob(rows[0])
    },

    async claim(params) {
      const { id, claimToken, nowMs, fence } = validated('claim', () => ({
        id: checkName('id', params.id),
        claimToken: checkName('claimToken', params.claimToken),
        nowMs: checkTime('nowMs', params.nowMs),
        fence: checkFence(params.fence),
      }))
      // Without the admission steps first; a job of a queue with keys or limits claims under them.
      const values = fence === null ? [id, claimToken, nowMs] : [id, claimToken, nowMs, ...fenceValues(fence)]
      const [keyless] = await claimWrite('claim', fence === null ? sql.claimKeyless : sql.claimKeylessFenced, values, fence)
      const [claimed] = keyless?.keyed_queue !== true ? [keyless] : await claimWrite('claim', fence === null ? sql.claim : sql.claimFenced, values, fence)
      // A fenced claim's row of nulls: the fence held and the job was not claimed.
      if (claimed !== undefined && claimed.id !== null) return { kind: 'claimed', job: decodeJob(claimed) }
      // One statement: the exhaustion rule buries it, or a claim refused for its key's limit (due
      // again at the next scan) or its buckets' tokens (due at the next token) parks it, and what
      // it found answers the rest (JobStore.ts).
      const [found] = await write('claim', sql.claimRefused, [id, nowMs, deadReasonExhausted, jobDueScanIntervalMs])
      if (found?.outcome === 'exhausted') return { kind: 'obsolete', reason: 'exhausted' }
      if (found?.outcome === 'limited') return { kind: 'obsolete', reason: 'limited' }
      if (found === undefined || found.state === null) return { kind: 'obsolete', reason: 'missing' }
      if (found.state === 'dead') return { kind: 'obsolete', reason: 'dead' }
      const refusal = claimRefusal(
        { state: found.state as JobState, deadlineMs: nullableInteger(found.deadline_ms, 'deadline_ms'), expiresAtMs: nullableInteger(found.expires_at_ms, 'expires_at_ms') },
        nowMs,
      )
      if (refusal === 'not-due' && found.paused === true) return { kind: 'obsolete', reason: 'paused' }
      return refusal === 'already-started' ? { kind: refusal } : { kind: 'obsolete', reason: refusal }
    },

    async heartbeat(params) {
      const { id, claimToken, nowMs, extendMs } = validated('heartbeat', () => ({
        ...checkClaimRef(params),
        nowMs: checkTime('nowMs', params.nowMs),
        extendMs: params.extendMs === null ? null : checkDurationMs('extendMs', params.extendMs, 1),
      }))
      const [row] = await write('heartbeat', sql.heartbeat, [id, claimToken, nowMs, extendMs])
      return row === undefined ? null : decodeJob(row)
    },

    async ack(params) {
      const { id, claimToken, nowMs } = validated('ack', () => ({ ...checkClaimRef(params), nowMs: checkTime('nowMs', params.nowMs) }))
      return (await write('ack', sql.ack, [id, claimToken, nowMs])).length === 1
    },

    async setProgress(params) {
      const { id, claimToken, nowMs, progress } = validated('setProgress', () => ({ ...checkClaimRef(params), nowMs: checkTime('nowMs', params.nowMs), progress: checkProgress('progress', params.progress) }))
      return (await write('setProgress', sql.setProgress, [id, claimToken, nowMs, JSON.stringify(progress)])).length === 1
    },

    async claimMany(params) {
      const { claims, nowMs, fence } = validated('claimMany', () => ({
        claims: checkClaims(params.claims),
        nowMs: checkTime('nowMs', params.nowMs),
        fence: checkFence(params.fence),
      }))
      if (claims.length === 0) return []
      const fenced = fence === null ? {} : { fence }
      // One claim: its own statement, whose plan the server keeps (jobTexts.ts says why).
      const [only] = claims
      if (claims.length === 1 && only !== undefined) return [await store.claim({ ...only, nowMs, ...fenced })]
      const values = [claims.map((claim) => claim.id), claims.map((claim) => claim.claimToken), nowMs]
      const rows =
        fence === null ? await write('claimMany', sql.claimMany, values) : await claimWrite('claimMany', sql.claimManyFenced, [...values, ...fenceValues(fence)], fence)
      const claimed = new Map(rows.filter((row) => row.id !== null).map((row) => [row.id as string, decodeJob(row)]))
      const outcomes: ClaimOutcome[] = []
      for (const claim of claims) {
        const job = claimed.get(claim.id)
        if (job !== undefined && job.claimToken === claim.claimToken) {
          claimed.delete(claim.id)
          outcomes.push({ kind: 'claimed', job })
        } else {
          // Not claimable now (or named twice): judged on its own, which also buries an exhausted job.
          outcomes.push(await store.claim({ id: claim.id, claimToken: claim.claimToken, nowMs, ...fenced }))
        }
      }
      return outcomes
    },

    async ackMany(params) {
      const { claims, nowMs } = validated('ackMany', () => ({ claims: checkClaims(params.claims), nowMs: checkTime('nowMs', params.nowMs) }))
      if (claims.length === 0) return []
      const rows = await write('ackMany', ...texts.ack(claims, nowMs))
      return rows.map((row) => row.id as string)
    },

    async ackBatch(params) {
      const { claims, nowMs } = validated('ackBatch', () => ({ claims: checkClaims(params.claims), nowMs: checkTime('nowMs', params.nowMs) }))
      if (claims.length === 0) return 0
      const rows = await write('ackBatch', ...texts.ack(claims, nowMs))
      return rows.length
    },

    async release(params) {
      const { claims, nowMs } = validated('release', () => ({ claims: checkClaims(params.claims), nowMs: checkTime('nowMs', params.nowMs) }))
      if (claims.length === 0) return []
      const rows = await write('release', sql.release, [claims.map((claim) => claim.id), claims.map((claim) => claim.claimToken), nowMs, dueChannel])
      return rows.map((row) => row.id as string)
    },

    async retry(params) {
      const { id, claimToken, nowMs, delayMs, error, stack } = validated('retry', () => ({
        error: checkError('error', params.error),
        stack: checkStack('stack', params.stack),
        ...checkClaimRef(params),
        nowMs: checkTime('nowMs', params.nowMs),
        delayMs: checkDurationMs('delayMs', params.delayMs, 0),
      }))
      const rows = await write('retry', sql.retry, [id, claimToken, nowMs, delayMs, error, stack, deadReasonExhausted])
      assert(rows.length <= 1, `retry of ${id} took both branches`)
      const [row] = rows
      if (row === undefined) return null
      return row.outcome === 'dead' ? { kind: 'dead' } : { kind: 'retried', runAtMs: toSafeInteger(row.run_at_ms, 'run_at_ms') }
    },

    async fail(params) {
      const { id, claimToken, nowMs, error, stack } = validated('fail', () => ({
        ...checkClaimRef(params),
        nowMs: checkTime('nowMs', params.nowMs),
        error: checkError('error', params.error),
        stack: checkStack('stack', params.stack),
      }))
      return (await write('fail', sql.fail, [id, claimToken, nowMs, error, stack])).length === 1
    },

    async cancel(params) {
      const { queue, id } = validated('cancel', () => checkJobRef(params))
      return (await write('cancel', sql.cancel, [id, queue])).length === 1
    },

    async sweepExpired(params) {
      const { queue, nowMs } = validated('sweepExpired', () => ({ queue: checkName('queue', params.queue), nowMs: checkTime('nowMs', params.nowMs) }))
      const [row] = await write('sweepExpired', sql.sweepExpired, [queue, nowMs, deadReasonExhausted, deadReasonExpired])
      assert(row !== undefined, 'sweepExpired returned no row')
      return { dead: toSafeInteger(row.dead, 'dead'), purged: toSafeInteger(row.purged, 'purged') }
    },

    ...makeSqlJobAdmin(driver, schema, session, dueChannel),

    async claimDue(params) {
      const { queue, nowMs, claimTokens, fence } = validated('claimDue', () => ({
        queue: checkName('queue', params.queue),
        nowMs: checkTime('nowMs', params.nowMs),
        claimTokens: checkTokens(params.claimTokens),
        fence: checkFence(params.fence),
      }))
      if (claimTokens.length === 0) return []
      const guard = keyedQueues.guardOf(queue)
      const rows = await claimWrite('claimDue', ...texts.claimDue(queue, claimTokens, nowMs, fence, guard), fence)
      // A keyless claim that found the queue keyed claimed nothing: claim under the guard.
      if (guard === 'keyless' && keyedQueues.learn(queue, rows)) return claimedInOrder(await claimWrite('claimDue', ...texts.claimDue(queue, claimTokens, nowMs, fence, 'admit'), fence))
      return claimedInOrder(rows)
    },

    async ackAndClaimDue(params) {
      const { acks, queue, nowMs, claimTokens, fence } = validated('ackAndClaimDue', () => ({
        acks: checkClaims(params.acks),
        queue: checkName('queue', params.queue),
        nowMs: checkTime('nowMs', params.nowMs),
        claimTokens: checkTokens(params.claimTokens),
        fence: checkFence(params.fence),
      }))
      // Acks alone are not a claim: no fence guards them.
      if (claimTokens.length === 0) return { acked: await store.ackMany({ claims: acks, nowMs }), claimed: [] }
      if (acks.length === 0) return { acked: [], claimed: await store.claimDue({ queue, nowMs, claimTokens, ...(fence === null ? {} : { fence }) }) }
      const guard = keyedQueues.guardOf(queue)
      const [text, values] = texts.ackAndClaimDue(queue, claimTokens, nowMs, acks, fence, guard)
      const rows = await claimWrite('ackAndClaimDue', text, values, fence)
      const acked = rows.find((row) => row.acked !== null)?.acked as string | string[] | undefined
      const ackedIds = acked === undefined ? [] : typeof acked === 'string' ? [acked] : acked
      if (guard === 'admit' || !keyedQueues.learn(queue, rows)) return { acked: ackedIds, claimed: claimedInOrder(rows) }
      // A keyless statement that found the queue keyed claimed nothing and acked only jobs
      // without a key: the other acks go through the guarded ackMany (which frees their slots),
      // then the claim runs under the guard. Its fence lost meanwhile, the acks are still
      // answered (they committed).
      const done = new Set(ackedIds)
      const rest = acks.filter((ack) => !done.has(ack.id))
      const allAcked = rest.length === 0 ? ackedIds : [...ackedIds, ...(await store.ackMany({ claims: rest, nowMs }))]
      try {
        return { acked: allAcked, claimed: await store.claimDue({ queue, nowMs, claimTokens, ...(fence === null ? {} : { fence }) }) }
      } catch (error) {
        if (error instanceof OwnershipLost) return { acked: allAcked, claimed: [] }
        throw error
      }
    },

    async takeDue(params) {
      const { nowMs, reserveUntilMs, limit, queues, skipKeys } = validated('takeDue', () => ({
        nowMs: checkTime('nowMs', params.nowMs),
        reserveUntilMs: checkTime('reserveUntilMs', params.reserveUntilMs),
        limit: checkCount('limit', params.limit, 0, 10_000),
        queues: checkQueues(params.queues),
        skipKeys: checkSkipKeys(params.skipConcurrencyKeys),
      }))
      const rows = await write('takeDue', texts.takeDue(queues), [nowMs, reserveUntilMs, limit, queues, deadReasonExhausted, deadReasonExpired, skipKeys])
      const due = rows.map(
        (row): DueJob => ({
          id: row.id as string,
          queue: row.queue as string,
          priority: toSafeInteger(row.priority, 'priority'),
          dueMs: toSafeInteger(row.previous_due_ms, 'previous_due_ms'),
          readySeq: toSafeInteger(row.ready_seq, 'ready_seq'),
          revision: toSafeInteger(row.revision, 'revision'),
          expiresAtMs: nullableInteger(row.expires_at_ms, 'expires_at_ms'),
          ...(row.concurrency_key === null ? {} : { concurrencyKey: row.concurrency_key as string }),
        }),
      )
      // RETURNING order is unspecified; claim order is the contract.
      return due.sort((a, b) => b.priority - a.priority || a.dueMs - b.dueMs || a.readySeq - b.readySeq)
    },

    async confirmDelivered(params) {
      const deliveries = validated('confirmDelivered', () => {
        if (!Array.isArray(params.deliveries)) throw new InvalidInput({ field: 'deliveries', reason: 'must be an array' })
        return params.deliveries.map((delivery, index) => ({
          id: checkName(`deliveries[${index}].id`, delivery?.id),
          revision: checkCount(`deliveries[${index}].revision`, delivery?.revision, 1, Number.MAX_SAFE_INTEGER),
        }))
      })
      if (deliveries.length === 0) return 0
      const rows = await write('confirmDelivered', sql.confirmDelivered, [deliveries.map((d) => d.id), deliveries.map((d) => d.revision)])
      return rows.length
    },

    async releaseDelivered(params) {
      const { deliveries, dueMs } = validated('releaseDelivered', () => {
        if (!Array.isArray(params.deliveries)) throw new InvalidInput({ field: 'deliveries', reason: 'must be an array' })
        return {
          dueMs: checkTime('dueMs', params.dueMs),
          deliveries: params.deliveries.map((delivery, index) => ({
            id: checkName(`deliveries[${index}].id`, delivery?.id),
            revision: checkCount(`deliveries[${index}].revision`, delivery?.revision, 1, Number.MAX_SAFE_INTEGER),
          })),
        }
      })
      if (deliveries.length === 0) return 0
      const rows = await write('releaseDelivered', sql.releaseDelivered, [deliveries.map((d) => d.id), deliveries.map((d) => d.revision), Math.floor(dueMs)])
      return rows.length
    },

    async nextDueMs(params) {
      const { nowMs, queues } = validated('nextDueMs', () => ({ nowMs: checkTime('nowMs', params.nowMs), queues: checkQueues(params.queues) }))
      const [row] = await read('nextDueMs', texts.nextDue(queues), [nowMs, queues])
      return nullableInteger(row?.next_due_ms, 'next_due_ms')
    },

    async dueQueues(params) {
      const { nowMs, limit } = validated('dueQueues', () => ({ nowMs: checkTime('nowMs', params.nowMs), limit: checkCount('limit', params.limit, 1, 10_000) }))
      const rows = await read('dueQueues', sql.dueQueues, [nowMs, limit])
      return rows.map((row) => ({ queue: row.queue as string, nextDueMs: toSafeInteger(row.next_due_ms, 'next_due_ms') }))
    },

    async deliverableCount(params) {
      const { queue, nowMs, limit } = validated('deliverableCount', () => ({
        queue: checkName('queue', params.queue),
        nowMs: checkTime('nowMs', params.nowMs),
        limit: checkCount('limit', params.limit, 1, 10_000),
      }))
      const [row] = await read('deliverableCount', sql.deliverableCount, [queue, nowMs, limit])
      return toSafeInteger(row?.deliverable ?? 0, 'deliverable')
    },

    async putSchedule(params) {
      const { name, spec, queue, payload, timezone, keys, nowMs } = validated('putSchedule', () => ({
        name: checkName('name', params.name),
        spec: checkName('spec', params.spec),
        queue: checkName('queue', params.queue),
        payload: validateJson('payload', params.payload),
        timezone: checkTimezone('timezone', params.timezone),
        keys: checkScheduleKeys(params),
        nowMs: checkTime('nowMs', params.nowMs),
      }))
      const keyValues = scheduleKeyFields.map((field) => keys[field] ?? null)
      const [changed] = await write('putSchedule', sql.putSchedule, [name, spec, queue, JSON.stringify(payload), nowMs, timezone, ...keyValues])
      if (changed !== undefined) return decodeSchedule(changed)
      const [current] = await read('putSchedule', sql.getSchedule, [name])
      assert(current !== undefined, `schedule ${name} neither changed nor exists`)
      return decodeSchedule(current)
    },

    async deleteSchedule(params) {
      const name = validated('deleteSchedule', () => checkName('name', params.name))
      return (await write('deleteSchedule', sql.deleteSchedule, [name])).length === 1
    },

    async listSchedules() {
      return (await read('listSchedules', sql.listSchedules, [])).map(decodeSchedule)
    },

    async acquireLease(params) {
      const { name, holder, nowMs, ttlMs } = validated('acquireLease', () => ({
        name: checkName('name', params.name),
        holder: checkName('holder', params.holder),
        nowMs: checkTime('nowMs', params.nowMs),
        ttlMs: checkDurationMs('ttlMs', params.ttlMs, 1),
      }))
      const [row] = await write('acquireLease', sql.acquireLease, [name, holder, nowMs, ttlMs])
      return row === undefined ? null : { fence: toSafeInteger(row.fence, 'fence') }
    },

    async fireSchedule(params) {
      const checked = validated('fireSchedule', () => {
        if (!Array.isArray(params.jobs)) throw new InvalidInput({ field: 'jobs', reason: 'must be an array' })
        return {
          leaseName: checkName('leaseName', params.leaseName),
          fence: checkCount('fence', params.fence, 1, Number.MAX_SAFE_INTEGER),
          name: checkName('name', params.name),
          expectedRevision: checkCount('expectedRevision', params.expectedRevision, 1, Number.MAX_SAFE_INTEGER),
          lastFiredMs: checkTime('lastFiredMs', params.lastFiredMs),
          jobs: params.jobs.map((job, index) => checkNewJob(job, `jobs[${index}]`)),
          nowMs: checkTime('nowMs', params.nowMs),
        }
      })
      try {
        return await driver.transaction(async (tx) => {
          const fenced = await tx.query(sql.lockLease, [checked.leaseName, checked.fence])
          if (fenced.rows.length === 0) return 'fenced' as const
          const marked = await tx.query(sql.markFired, [checked.name, checked.expectedRevision, checked.lastFiredMs])
          if (marked.rows.length === 0) return 'conflict' as const
          await insertMany(async (values, fair) => (await tx.query<Row>(fair ? sql.enqueueManyFair : sql.enqueueMany, values)).rows, checked.jobs, checked.nowMs, dueChannel)
          return 'fired' as const
        })
      } catch (error) {
        throw toStoreError('fireSchedule', true, error)
      }
    },

    close: session.close,
  }
  return store
}

/**
 * The queues this store has seen concurrency keys in, which it claims from with the `admit`
 * guard (jobSql.ts's `ClaimGuard`); every other queue is claimed `keyless` until a claim answers
 * that it has a slot row. At most `keyedQueuesKnownMax` are kept: past it the set starts again,
 * and a forgotten queue costs one more round trip to be learnt again.
 */
function makeKeyedQueues(): { guardOf(queue: string): 'admit' | 'keyless'; learn(queue: string, rows: ReadonlyArray<Row>): boolean } {
  const keyed = new Set<string>()
  return {
    guardOf: (queue) => (keyed.has(queue) ? 'admit' : 'keyless'),
    learn(queue, rows) {
      if (!rows.some((row) => row.keyed_queue === true)) return false
      if (keyed.size >= keyedQueuesKnownMax) keyed.clear()
      keyed.add(queue)
      return true
    },
  }
}

/** Migrates `driver`'s database (every migration, Matching's included) and returns a JobStore over it. */
export async function openSqlJobStore(driver: Driver, options: { readonly schema?: string } = {}): Promise<JobStore> {
  return openMigrated(driver, options.schema, (schema) => makeSqlJobStore(driver, schema))
}
