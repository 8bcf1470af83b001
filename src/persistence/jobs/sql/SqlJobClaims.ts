/**
 * SqlJobClaims — the claim operations of the SQL job store (SqlJobStore.ts): `claim` by id,
 * `claimMany`, and the head claims `claimDue` and `ackAndClaimDue`, each in its fenced form when
 * the caller gives a range fence.
 *
 * Head claims of a queue this store has not seen concurrency keys or rate limits in run jobSql.ts's
 * `keyless` form, without the admission steps (of the slots and of the rate buckets, rateSql.ts);
 * the first that answers the queue keyed (it then claimed nothing) is run again in the `admit`
 * form, which the store keeps to for that queue (`makeKeyedQueues`). Claims by id always run under
 * the guard.
 *
 * `ackAndClaimDue` runs jobSql.ts's `lean` head form, which reads only the pending head: when it
 * answers that the queue has claimable rows whose task is with Matching or lapsed claims (it then
 * claimed nothing, its acks done), the claim runs again as `claimDue`, and the store keeps to the
 * `full` form for that queue until a full claim reads none of those rows (`makeRareHeadQueues`).
 *
 * A fenced claim runs its statement's fenced form (claimFenceSql.ts says how one statement holds
 * the range); a statement answering no row at all was refused, and becomes `OwnershipLost`.
 * `claim`'s follow-up statement after a claim that did not happen (bury an exhausted job, park a
 * job refused for its concurrency key's limit or for its rate buckets' tokens, read why) claims
 * nothing, so it is not fenced; `claimMany`'s judgement of a job its batch did not claim is a
 * fenced `claim`.
 *
 * Invariants: inputs validated (JobInput.ts) before any SQL; rows decoded with assertions
 * (jobRows.ts). Does not: ack on its own (`ackAndClaimDue`'s fallback acks through the
 * store's `ackMany`, SqlJobHandles.ts), read a clock, or retry.
 */
import { OwnershipLost } from '../../../domain/errors.ts'
import { claimRefusal, deadReasonExhausted } from '../../../domain/JobRules.ts'
import { jobDueScanIntervalMs, keyedQueuesKnownMax, rareHeadQueuesKnownMax } from '../../../kernel/Limits.ts'
import type { Schema } from '../../sql/Schema.ts'
import type { SqlSession } from '../../sql/SqlSession.ts'
import { checkClaims, checkFence, checkName, checkTime, checkTokens } from '../JobInput.ts'
import type { ClaimFence, ClaimOutcome, JobRecord, JobState, JobStore } from '../JobStore.ts'
import { fenceRefusal, fenceValues } from './claimFenceSql.ts'
import { claimedInOrder, decodeJob, nullableInteger } from './jobRows.ts'
import * as jobSql from './jobSql.ts'
import type { JobTexts } from './jobTexts.ts'

type Row = Record<string, unknown>

// What the claim operations share: the session, the statements, the keyed queues learnt so far,
// the store's `ackMany`, and the operations themselves (a claim of several falls back to claims
// of one), made once per store.
interface ClaimContext {
  readonly schema: Schema
  readonly session: SqlSession
  readonly texts: JobTexts
  readonly sql: ReturnType<typeof claimStatements>
  readonly keyedQueues: KeyedQueues
  readonly rareHeadQueues: RareHeadQueues
  readonly handles: Pick<JobStore, 'ackMany'>
  readonly operations: ClaimOperations
}

type ClaimOperations = Pick<JobStore, 'claim' | 'claimMany' | 'claimDue' | 'ackAndClaimDue'>

/**
 * The claim operations over `session`'s migrated `schema`, with the shape-chosen `texts` of that
 * schema; `handles` holds the store's own `ackMany`, through which `ackAndClaimDue` acks what its
 * keyless statement left when it found the queue keyed.
 */
export function makeSqlJobClaims(schema: Schema, session: SqlSession, texts: JobTexts, handles: Pick<JobStore, 'ackMany'>): ClaimOperations {
  const operations: ClaimOperations = {
    claim: (params) => claim(context, params),
    claimMany: (params) => claimMany(context, params),
    claimDue: (params) => claimDue(context, params),
    ackAndClaimDue: (params) => ackAndClaimDue(context, params),
  }
  const context: ClaimContext = { schema, session, texts, sql: claimStatements(schema), keyedQueues: makeKeyedQueues(), rareHeadQueues: makeRareHeadQueues(), handles, operations }
  return operations
}

function claimStatements(schema: Schema) {
  return {
    claim: jobSql.claimSql(schema),
    claimFenced: jobSql.claimSql(schema, true),
    claimKeyless: jobSql.claimKeylessSql(schema),
    claimKeylessFenced: jobSql.claimKeylessSql(schema, true),
    claimMany: jobSql.claimManySql(schema),
    claimManyFenced: jobSql.claimManySql(schema, true),
    claimRefused: jobSql.claimRefusedSql(schema),
  }
}

type Params<Operation extends keyof ClaimOperations> = Parameters<ClaimOperations[Operation]>[0]
type Answer<Operation extends keyof ClaimOperations> = ReturnType<ClaimOperations[Operation]>

async function claim(context: ClaimContext, params: Params<'claim'>): Answer<'claim'> {
  const { sql } = context
  const { id, claimToken, nowMs, fence } = context.session.validated('claim', () => ({
    id: checkName('id', params.id),
    claimToken: checkName('claimToken', params.claimToken),
    nowMs: checkTime('nowMs', params.nowMs),
    fence: checkFence(params.fence),
  }))
  // Without the admission steps first; a job of a queue with keys or limits claims under them.
  const values = fence === null ? [id, claimToken, nowMs] : [id, claimToken, nowMs, ...fenceValues(fence)]
  const [keyless] = await fencedWrite(context, 'claim', fence === null ? sql.claimKeyless : sql.claimKeylessFenced, values, fence)
  const [claimed] = keyless?.keyed_queue !== true ? [keyless] : await fencedWrite(context, 'claim', fence === null ? sql.claim : sql.claimFenced, values, fence)
  // A fenced claim's row of nulls: the fence held and the job was not claimed.
  if (claimed !== undefined && claimed.id !== null) return { kind: 'claimed', job: decodeJob(claimed) }
  // One statement: the exhaustion rule buries it, or a claim refused for its key's limit (due
  // again at the next scan) or its buckets' tokens (due at the next token) parks it, and what
  // it found answers the rest (JobStore.ts).
  const [found] = await context.session.write<Row>('claim', sql.claimRefused, [id, nowMs, deadReasonExhausted, jobDueScanIntervalMs])
  return refusedOutcome(found, nowMs)
}

async function claimMany(context: ClaimContext, params: Params<'claimMany'>): Answer<'claimMany'> {
  const { operations, sql } = context
  const { claims, nowMs, fence } = context.session.validated('claimMany', () => ({
    claims: checkClaims(params.claims),
    nowMs: checkTime('nowMs', params.nowMs),
    fence: checkFence(params.fence),
  }))
  if (claims.length === 0) return []
  const fenced = fence === null ? {} : { fence }
  // One claim: its own statement, whose plan the server keeps (jobTexts.ts says why).
  const [only] = claims
  if (claims.length === 1 && only !== undefined) return [await operations.claim({ ...only, nowMs, ...fenced })]
  const values = [claims.map((claim) => claim.id), claims.map((claim) => claim.claimToken), nowMs]
  const rows =
    fence === null ? await context.session.write<Row>('claimMany', sql.claimMany, values) : await fencedWrite(context, 'claimMany', sql.claimManyFenced, [...values, ...fenceValues(fence)], fence)
  const claimed = new Map(rows.filter((row) => row.id !== null).map((row) => [row.id as string, decodeJob(row)]))
  const outcomes: ClaimOutcome[] = []
  for (const claim of claims) {
    const job = claimed.get(claim.id)
    if (job !== undefined && job.claimToken === claim.claimToken) {
      claimed.delete(claim.id)
      outcomes.push({ kind: 'claimed', job })
    } else {
      // Not claimable now (or named twice): judged on its own, which also buries an exhausted job.
      outcomes.push(await operations.claim({ id: claim.id, claimToken: claim.claimToken, nowMs, ...fenced }))
    }
  }
  return outcomes
}

async function claimDue(context: ClaimContext, params: Params<'claimDue'>): Answer<'claimDue'> {
  const { keyedQueues, texts } = context
  const { queue, nowMs, claimTokens, fence } = context.session.validated('claimDue', () => ({
    queue: checkName('queue', params.queue),
    nowMs: checkTime('nowMs', params.nowMs),
    claimTokens: checkTokens(params.claimTokens),
    fence: checkFence(params.fence),
  }))
  if (claimTokens.length === 0) return []
  const guard = keyedQueues.guardOf(queue)
  const rows = await fencedWrite(context, 'claimDue', ...texts.claimDue(queue, claimTokens, nowMs, fence, guard), fence)
  // A keyless claim that found the queue keyed claimed nothing: claim under the guard.
  if (guard === 'keyless' && keyedQueues.learn(queue, rows)) return claimedInOrder(await fencedWrite(context, 'claimDue', ...texts.claimDue(queue, claimTokens, nowMs, fence, 'admit'), fence))
  return claimedInOrder(rows)
}

async function ackAndClaimDue(context: ClaimContext, params: Params<'ackAndClaimDue'>): Answer<'ackAndClaimDue'> {
  const { handles, keyedQueues, operations, rareHeadQueues } = context
  const { acks, queue, nowMs, claimTokens, fence } = context.session.validated('ackAndClaimDue', () => ({
    acks: checkClaims(params.acks),
    queue: checkName('queue', params.queue),
    nowMs: checkTime('nowMs', params.nowMs),
    claimTokens: checkTokens(params.claimTokens),
    fence: checkFence(params.fence),
  }))
  // Acks alone are not a claim: no fence guards them.
  if (claimTokens.length === 0) return { acked: await handles.ackMany({ claims: acks, nowMs }), claimed: [] }
  if (acks.length === 0) return { acked: [], claimed: await operations.claimDue({ queue, nowMs, claimTokens, ...(fence === null ? {} : { fence }) }) }
  const guard = keyedQueues.guardOf(queue)
  const heads = rareHeadQueues.headsOf(queue)
  const [text, values] = context.texts.ackAndClaimDue(queue, claimTokens, nowMs, acks, fence, guard, heads)
  const rows = await fencedWrite(context, 'ackAndClaimDue', text, values, fence)
  const acked = rows.find((row) => row.acked !== null)?.acked as string | string[] | undefined
  const ackedIds = acked === undefined ? [] : typeof acked === 'string' ? [acked] : acked
  const rare = rareHeadQueues.learn(queue, heads, rows)
  if (guard === 'keyless' && keyedQueues.learn(queue, rows)) {
    // A keyless statement that found the queue keyed claimed nothing and acked only jobs
    // without a key: the other acks go through the guarded ackMany (which frees their slots),
    // then the claim runs under the guard.
    const done = new Set(ackedIds)
    const rest = acks.filter((ack) => !done.has(ack.id))
    const allAcked = rest.length === 0 ? ackedIds : [...ackedIds, ...(await handles.ackMany({ claims: rest, nowMs }))]
    return { acked: allAcked, claimed: await claimAfterAcks(context, { queue, nowMs, claimTokens, fence }) }
  }
  // A lean statement that found rows with Matching or lapsed claims claimed nothing: claim with every head.
  if (heads === 'lean' && rare) return { acked: ackedIds, claimed: await claimAfterAcks(context, { queue, nowMs, claimTokens, fence }) }
  return { acked: ackedIds, claimed: claimedInOrder(rows) }
}

// The claim of an `ackAndClaimDue` whose statement acked but could not claim, as `claimDue`: its
// fence lost meanwhile, nothing is claimed and the acks are still answered (they committed).
async function claimAfterAcks(context: ClaimContext, params: { queue: string; nowMs: number; claimTokens: ReadonlyArray<string>; fence: ClaimFence | null }): Promise<ReadonlyArray<JobRecord>> {
  const { queue, nowMs, claimTokens, fence } = params
  try {
    return await context.operations.claimDue({ queue, nowMs, claimTokens, ...(fence === null ? {} : { fence }) })
  } catch (error) {
    if (error instanceof OwnershipLost) return []
    throw error
  }
}

// Runs a claim statement in its fenced form when `fence` is given: its rows, or OwnershipLost
// when it answered none (refused, nothing written).
async function fencedWrite(context: ClaimContext, operation: string, text: string, params: ReadonlyArray<unknown>, fence: ClaimFence | null): Promise<Row[]> {
  const { session } = context
  const rows = await session.write<Row>(operation, text, params)
  if (fence !== null && rows.length === 0) throw await fenceRefusal(context.schema, fence, (refusalText, values) => session.read<Row>(operation, refusalText, values))
  return rows
}

// What `claim` answers for a job its statement did not claim, from the row of its follow-up
// statement (`found`, absent when the job is gone).
function refusedOutcome(found: Row | undefined, nowMs: number): ClaimOutcome {
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
}

interface KeyedQueues {
  guardOf(queue: string): 'admit' | 'keyless'
  learn(queue: string, rows: ReadonlyArray<Row>): boolean
}

/**
 * The queues this store has seen concurrency keys in, which it claims from with the `admit`
 * guard (jobSql.ts's `ClaimGuard`); every other queue is claimed `keyless` until a claim answers
 * that it has a slot row. At most `keyedQueuesKnownMax` are kept: past it the set starts again,
 * and a forgotten queue costs one more round trip to be learnt again.
 */
function makeKeyedQueues(): KeyedQueues {
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

interface RareHeadQueues {
  headsOf(queue: string): jobSql.HeadForm
  learn(queue: string, heads: jobSql.HeadForm, rows: ReadonlyArray<Row>): boolean
}

/**
 * The queues whose last riding claim found claimable rows whose task is with Matching or lapsed
 * claims (`rare_heads`), which `ackAndClaimDue` claims from in the `full` head form (jobSql.ts's
 * `HeadForm`) until a full claim reads none; every other queue is claimed `lean`. Learning is
 * per answer: `learn` records whether the statement's rows say the queue has such rows, and
 * answers it. At most `rareHeadQueuesKnownMax` are kept: past it the set starts again.
 */
function makeRareHeadQueues(): RareHeadQueues {
  const rare = new Set<string>()
  return {
    headsOf: (queue) => (rare.has(queue) ? 'full' : 'lean'),
    learn(queue, heads, rows) {
      const found = rows.some((row) => row.rare_heads === true)
      if (found && heads === 'lean') {
        if (rare.size >= rareHeadQueuesKnownMax) rare.clear()
        rare.add(queue)
      } else if (!found && heads === 'full') {
        rare.delete(queue)
      }
      return found
    },
  }
}
