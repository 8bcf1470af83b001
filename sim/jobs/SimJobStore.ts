/**
 * SimJobStore — the JobStore one simulated engine sees (the job twin of SimStore.ts). Every
 * call is parked in the IoGate until the world runs it, one at a time; when a call the job
 * checkers care about commits, it is reported to the boundary log before the engine hears
 * back — so a crash after commit still leaves its record, as the database would.
 *
 * A claim also carries what the claiming host's membership view said at the moment it was
 * issued (JobBoundary.ts's ClaimOwnership), for the ownership checker, and names the
 * partitions that view gave the host in its trace label.
 *
 * Batched calls (`enqueueMany`, `claimMany`, `ackMany`, `ackAndClaimDue`, `claimDue`) pass the
 * gate as the one statement production runs — one ordering decision, one fault — and their
 * outcomes reach the boundary log one record per job, in the statement's own order (acks before
 * the claims riding with them), so the checkers judge every job a batch touched.
 *
 * An enqueue (or a batch's job) that a key's live holder answered wrote nothing, and is recorded as
 * answered (`enqueueAnswered`): the call committed, which a checker reading an engine's last store
 * call must know.
 *
 * `ackBatch` is read around (each named job before and after, on the store underneath) so the
 * checkers learn exactly which claims it acked, not only how many; an `enqueue`, and each job an
 * `enqueueMany` wrote, is read after, for the fairness pass the store wrote (a keyed job's, or an
 * unkeyed one's in a queue with keys: the implicit key's).
 *
 * The head statements (`claimDue`, `ackAndClaimDue` with claim tokens, `takeDue` with a limit) pass
 * through the world's row-lock windows when it has them (SimRowLocks.ts): run beside statements
 * that started first, they skip the rows those hold.
 *
 * Wrap, don't fork: the store underneath is the real one (memory or SQL), possibly wrapped by
 * a mutant (sim/jobs/JobMutations.ts). Does not: judge anything or inject faults (the world does).
 */
import { type ClaimFence, insertedJobRecord, type JobRecord, type JobStore } from '../../src/persistence/jobs/JobStore.ts'
import type { HeldHead } from '../../src/persistence/jobs/MemoryRowLocks.ts'
import type { IoGate } from '../core/IoGate.ts'
import { type ClaimOwnership, type JobBoundaryListener, keysOf } from './JobBoundary.ts'
import type { SimRowLocks } from './SimRowLocks.ts'

/** What a gated job store needs besides the store it wraps. */
export interface SimJobStoreDeps {
  readonly hostId: string
  readonly gate: IoGate
  /** The world's clock (commit times). */
  readonly now: () => number
  readonly record: JobBoundaryListener
  /** The queue of a job id the world has seen enqueued (for reads around `ackBatch`). */
  readonly queueOf: (id: string) => string | undefined
  /** What this host's membership view said when its Matching handed job `id`'s task out, else says now (see JobBoundary.ts); absent: no group. */
  readonly ownershipOf?: (id: string) => ClaimOwnership | null
  /** What this host's membership view says about `queue` now: a claim straight from the store (`claimDue`) is handed out when issued. */
  readonly viewOf?: (queue: string) => ClaimOwnership | null
  /** The world's row-lock windows (SimRowLocks.ts), which the head statements pass through; absent: none. */
  readonly rowLocks?: SimRowLocks
}

/** A host's view of the shared job store, through the gate. */
export function makeSimJobStore(inner: JobStore, deps: SimJobStoreDeps): JobStore {
  const { hostId, gate, now, record } = deps
  const park = <T>(label: string, isWrite: boolean, run: () => Promise<T>): Promise<T> => gate.park(hostId, label, isWrite, run)
  // A head statement (one that skips locked rows) runs through the world's row-lock windows, when it has them.
  const parkHead = <T>(label: string, head: HeldHead, run: () => Promise<T>): Promise<T> =>
    park(label, true, deps.rowLocks === undefined || head.rows === 0 ? run : deps.rowLocks.statement(hostId, label, head, run))
  const stamp = (nowMs: number) => ({ hostId, nowMs, committedAtMs: now() })
  const fenceOf = (fence: ClaimFence | undefined) => (fence === undefined ? {} : { fence })
  const claimed = (nowMs: number, job: JobRecord, ownership: ClaimOwnership | null, fence: ClaimFence | undefined) =>
    record({ op: 'claim', ...stamp(nowMs), id: job.id, claimToken: job.claimToken as string, outcome: { kind: 'claimed', job }, ownership, ...fenceOf(fence) })
  const acked = (nowMs: number, claims: ReadonlyArray<{ readonly id: string; readonly claimToken: string }>, ids: ReadonlyArray<string>) => {
    const gone = new Set(ids)
    for (const claim of claims) record({ op: 'ack', ...stamp(nowMs), id: claim.id, claimToken: claim.claimToken, ok: gone.delete(claim.id) })
  }
  return {
    kind: inner.kind,
    enqueueMany: (params, tx) =>
      park(`job.enqueueMany ×${params.jobs.length}${params.jobs.some((job) => job.key != null) ? ' keyed' : ''}`, true, async () => {
        const answers = await inner.enqueueMany(params, tx)
        // A job answered by its own id was written; one answered by another's (a key's holder) was
        // not. A job's pass is read before any other call runs, as after an enqueue;
        // the batch's jobs are recorded in its order, the order the store drew their passes in.
        for (const [i, job] of params.jobs.entries()) {
          const answerId = answers[i]?.id
          if (answerId !== job.id) {
            if (answerId !== undefined) record({ op: 'enqueueAnswered', ...stamp(params.nowMs), queue: job.queue, id: answerId })
            continue
          }
          const fairPass = (await inner.getJob({ queue: job.queue, id: job.id }))?.fairPass
          record({ op: 'enqueue', ...stamp(params.nowMs), job: insertedJobRecord(job, params.nowMs, null, job.payload), ...keysOf(job), ...(fairPass == null ? {} : { fairPass }) })
        }
        return answers
      }),
    claimMany: (params) => {
      const owned = params.claims.map((claim) => deps.ownershipOf?.(claim.id) ?? null)
      return park(`job.claimMany ${params.claims.map((claim) => claim.id).join(',')}`, true, async () => {
        const outcomes = await inner.claimMany(params)
        params.claims.forEach((claim, i) => {
          const outcome = outcomes[i]
          if (outcome !== undefined) record({ op: 'claim', ...stamp(params.nowMs), id: claim.id, claimToken: claim.claimToken, outcome, ownership: owned[i] ?? null, ...fenceOf(params.fence) })
        })
        return outcomes
      })
    },
    ackMany: (params) =>
      park(`job.ackMany ${params.claims.map((claim) => claim.id).join(',')}`, true, async () => {
        const ids = await inner.ackMany(params)
        acked(params.nowMs, params.claims, ids)
        return ids
      }),
    ackAndClaimDue: (params) => {
      // Read at the statement's issue: the view the engine acted on.
      const ownership = deps.viewOf?.(params.queue) ?? null
      return parkHead(`job.ackAndClaimDue ${params.queue} ack ${params.acks.map((claim) => claim.id).join(',') || 'none'} claim ≤${params.claimTokens.length}`, { queues: [params.queue], rows: params.claimTokens.length, kind: 'claim', fence: params.fence ?? null }, async () => {
        const answer = await inner.ackAndClaimDue(params)
        acked(params.nowMs, params.acks, answer.acked)
        for (const job of answer.claimed) claimed(params.nowMs, job, ownership, params.fence)
        return answer
      })
    },
    enqueue: (params, tx) =>
      park(`job.enqueue ${params.job.queue} ${params.job.id} p${params.job.priority}${params.toWaiter === true ? ' to a waiter' : ''}`, true, async () => {
        const answer = await inner.enqueue(params, tx)
        // A key's live holder answers in its place: nothing was written.
        if (answer.id !== params.job.id) {
          record({ op: 'enqueueAnswered', ...stamp(params.nowMs), queue: params.job.queue, id: answer.id })
          return answer
        }
        // The job's pass (none without a key in a queue without keys), read before any other call runs.
        const fairPass = (await inner.getJob({ queue: answer.queue, id: answer.id }))?.fairPass
        // A job handed to a waiter is claimed under the waiter's fence, its engine's range.
        const { handedTo, ...job } = answer
        record({ op: 'enqueue', ...stamp(params.nowMs), job, ...keysOf(params.job), ...(fairPass == null ? {} : { fairPass }), ...fenceOf(params.fence ?? handedTo?.fence) })
        return answer
      }),
    addWaiters: (params) => park(`job.addWaiters ${params.queue} ${params.claimTokens.join(',')}`, true, () => inner.addWaiters(params)),
    removeWaiters: (params) => park(`job.removeWaiters ${params.claimTokens.join(',')}`, true, () => inner.removeWaiters(params)),
    getJob: (params) =>
      park(`job.get ${params.id}`, false, async () => {
        const job = await inner.getJob(params)
        record({ op: 'getJob', ...stamp(now()), queue: params.queue, id: params.id, job })
        return job
      }),
    claim: (params) => {
      // Read at the claim's issue, not its commit: the view the engine acted on.
      const ownership = deps.ownershipOf?.(params.id) ?? null
      const owns = ownership === null ? '' : ` (${ownership.queue}: owns ${ownership.owned.join(',') || 'none'} of ${ownership.partitions})`
      return park(`job.claim ${params.id}${owns}`, true, async () => {
        const outcome = await inner.claim(params)
        record({ op: 'claim', ...stamp(params.nowMs), id: params.id, claimToken: params.claimToken, outcome, ownership, ...fenceOf(params.fence) })
        return outcome
      })
    },
    claimDue: (params) => {
      const ownership = deps.viewOf?.(params.queue) ?? null
      return parkHead(`job.claimDue ${params.queue} ≤${params.claimTokens.length}`, { queues: [params.queue], rows: params.claimTokens.length, kind: 'claim', fence: params.fence ?? null }, async () => {
        const jobs = await inner.claimDue(params)
        for (const job of jobs) claimed(params.nowMs, job, ownership, params.fence)
        return jobs
      })
    },
    heartbeat: (params) =>
      park(`job.heartbeat ${params.id} ${params.claimToken}`, true, async () => {
        const renewed = await inner.heartbeat(params)
        record({ op: 'heartbeat', ...stamp(params.nowMs), id: params.id, claimToken: params.claimToken, extendMs: params.extendMs, renewed })
        return renewed
      }),
    ack: (params) =>
      park(`job.ack ${params.id} ${params.claimToken}`, true, async () => {
        const ok = await inner.ack(params)
        record({ op: 'ack', ...stamp(params.nowMs), id: params.id, claimToken: params.claimToken, ok })
        return ok
      }),
    ackBatch: (params) =>
      park(`job.ackBatch ×${params.claims.length}`, true, async () => {
        const live = await liveIds(inner, params.claims.map((claim) => claim.id), deps.queueOf)
        const count = await inner.ackBatch(params)
        const gone: string[] = []
        for (const id of live) if ((await inner.getJob({ queue: deps.queueOf(id) as string, id })) === null) gone.push(id)
        record({ op: 'ackBatch', ...stamp(params.nowMs), claims: params.claims, count, ackedIds: gone })
        return count
      }),
    release: (params) =>
      park(`job.release ×${params.claims.length}`, true, async () => {
        const releasedIds = await inner.release(params)
        record({ op: 'release', ...stamp(params.nowMs), claims: params.claims, releasedIds })
        return releasedIds
      }),
    releaseHandedOver: (params) =>
      park(`job.releaseHandedOver ${params.queue} ${params.claimTokens.join(',')}`, true, async () => {
        const claims = await inner.releaseHandedOver(params)
        record({ op: 'release', ...stamp(params.nowMs), claims, releasedIds: claims.map((claim) => claim.id) })
        return claims
      }),
    retry: (params) =>
      park(`job.retry ${params.id} ${params.claimToken} +${params.delayMs}ms`, true, async () => {
        const outcome = await inner.retry(params)
        record({ op: 'retry', ...stamp(params.nowMs), id: params.id, claimToken: params.claimToken, outcome })
        return outcome
      }),
    fail: (params) =>
      park(`job.fail ${params.id} ${params.claimToken}`, true, async () => {
        const ok = await inner.fail(params)
        record({ op: 'fail', ...stamp(params.nowMs), id: params.id, claimToken: params.claimToken, ok })
        return ok
      }),
    cancel: (params) =>
      park(`job.cancel ${params.id}`, true, async () => {
        const ok = await inner.cancel(params)
        record({ op: 'cancel', ...stamp(now()), queue: params.queue, id: params.id, ok })
        return ok
      }),
    sweepExpired: (params) =>
      park(`job.sweep ${params.queue}`, true, async () => {
        const result = await inner.sweepExpired(params)
        record({ op: 'sweep', ...stamp(params.nowMs), queue: params.queue, dead: result.dead, purged: result.purged })
        return result
      }),
    takeDue: (params) =>
      parkHead(`job.takeDue ≤${params.limit}`, { queues: params.queues ?? null, rows: params.limit, kind: 'reserve', ...(params.skipConcurrencyKeys === undefined ? {} : { skipKeys: params.skipConcurrencyKeys }) }, async () => {
        const due = await inner.takeDue(params)
        if (due.length > 0) record({ op: 'reserve', ...stamp(params.nowMs), ids: due.map((job) => job.id), untilMs: params.reserveUntilMs })
        return due
      }),
    confirmDelivered: (params) =>
      park(`job.confirm ×${params.deliveries.length}`, true, async () => {
        const count = await inner.confirmDelivered(params)
        record({ op: 'confirm', ...stamp(now()), ids: params.deliveries.map((delivery) => delivery.id), untilMs: null })
        return count
      }),
    releaseDelivered: (params) =>
      park(`job.release ×${params.deliveries.length}`, true, async () => {
        const count = await inner.releaseDelivered(params)
        record({ op: 'unreserve', ...stamp(now()), ids: params.deliveries.map((delivery) => delivery.id), untilMs: params.dueMs })
        return count
      }),
    nextDueMs: (params) => park('job.nextDue', false, () => inner.nextDueMs(params)),
    dueQueues: (params) => park('job.dueQueues', false, () => inner.dueQueues(params)),
    deliverableCount: (params) => park(`job.deliverable ${params.queue}`, false, () => inner.deliverableCount(params)),
    countJobs: (params) => park(`job.count ${params.queue}`, false, () => inner.countJobs(params)),
    countQueues: (params) => park('job.countQueues', false, () => inner.countQueues(params)),
    setProgress: (params) => park(`job.progress ${params.id} ${params.claimToken}`, true, () => inner.setProgress(params)),
    pauseQueue: (params) =>
      park(`job.pause ${params.queue}`, true, async () => {
        const changed = await inner.pauseQueue(params)
        record({ op: 'pause', ...stamp(params.nowMs), queue: params.queue, changed })
        return changed
      }),
    resumeQueue: (params) =>
      park(`job.resume ${params.queue}`, true, async () => {
        const changed = await inner.resumeQueue(params)
        record({ op: 'resume', ...stamp(params.nowMs), queue: params.queue, changed })
        return changed
      }),
    queuePause: (params) => park(`job.queuePause ${params.queue}`, false, () => inner.queuePause(params)),
    pausedQueues: (params) => park('job.pausedQueues', false, () => inner.pausedQueues(params)),
    listJobs: (params) => park(`job.list ${params.queue} ${params.state}`, false, () => inner.listJobs(params)),
    retryDead: (params) => park(`job.retryDead ${params.id}`, true, () => inner.retryDead(params)),
    putSchedule: (params) => park(`job.putSchedule ${params.name}`, true, () => inner.putSchedule(params)),
    deleteSchedule: (params) => park(`job.deleteSchedule ${params.name}`, true, () => inner.deleteSchedule(params)),
    listSchedules: () => park('job.listSchedules', false, () => inner.listSchedules()),
    acquireLease: (params) => park(`job.lease ${params.name}`, true, () => inner.acquireLease(params)),
    fireSchedule: (params) => park(`job.fire ${params.name}`, true, () => inner.fireSchedule(params)),
    // The world closes the shared stores once, after every engine has closed.
    close: async () => {},
  }
}

// The ids among `ids` whose job is live (pending or processing) right now, each once.
async function liveIds(inner: JobStore, ids: ReadonlyArray<string>, queueOf: (id: string) => string | undefined): Promise<string[]> {
  const live: string[] = []
  for (const id of new Set(ids)) {
    const queue = queueOf(id)
    if (queue === undefined) continue
    const job = await inner.getJob({ queue, id })
    if (job !== null && job.state !== 'dead') live.push(id)
  }
  return live
}
