/**
 * KeyMutations — the job mutation menu's bugs in fairness keys and per-key concurrency slots
 * (JobMutations.ts lists and describes them; the fair pass, concurrency per key and prompt
 * delivery checkers catch them). Each is a wrapper of the real store, under the boundary log:
 * the engine, and the log, see the store they always see; only the store's answers change.
 *
 * Does not: fork a store. A bug the store's own statements would have is emulated by what the
 * wrapper can change — the input it passes on, or a refusal it answers instead — so that what a
 * client observes is what the real bug would show.
 */
import type { JobStore, NewJob } from '../../src/persistence/jobs/JobStore.ts'

/** `weightIgnored`: every keyed enqueue reaches the store with weight 1. */
export function weightIgnoredStore(base: JobStore, inner: JobStore): JobStore {
  // Keyed jobs come only one at a time (enqueueMany refuses fairness keys).
  return { ...base, enqueue: (params, tx) => inner.enqueue({ ...params, job: params.job.fairnessWeight === undefined ? params.job : { ...params.job, fairnessWeight: 1 } }, tx) }
}

/**
 * `dedupStepsPass`: an enqueue answered by its job key's holder steps its fairness key's pass
 * anyway. The store underneath cannot be made to, so the key's next written job is given a
 * weight that many strides lighter, which lands it on the same pass.
 */
export function dedupStepsPassStore(base: JobStore, inner: JobStore): JobStore {
  // Per (queue, fairness key): the steps duplicates took that the next written job pays for.
  const owed = new Map<string, number>()
  return {
    ...base,
    async enqueue(params, tx) {
      const { job } = params
      if (job.fairnessKey == null) return await inner.enqueue(params, tx)
      const name = `${job.queue}\u0000${job.fairnessKey}`
      const steps = 1 + (owed.get(name) ?? 0)
      const weight = Math.max((job.fairnessWeight ?? 1) / steps, 0.001)
      const answer = await inner.enqueue({ ...params, job: { ...job, fairnessWeight: weight } }, tx)
      owed.set(name, answer.id === job.id ? 0 : steps)
      return answer
    },
  }
}

/**
 * `implicitKeyIgnored`: an unkeyed job of a queue with keys is given no pass, as in a queue
 * without keys. The store underneath cannot be made to skip the implicit key, so the wrapper
 * answers every read of an unkeyed job without its pass: what a client reads is what the real
 * bug would write, though the store still claims the job in its implicit key's turn (that order
 * is the conformance suites' to judge).
 */
export function implicitKeyIgnoredStore(base: JobStore, inner: JobStore): JobStore {
  return {
    ...base,
    async getJob(params) {
      const job = await inner.getJob(params)
      if (job === null || job.fairnessKey != null || job.fairPass == null) return job
      const { fairPass: _dropped, ...rest } = job
      return rest
    },
  }
}

/** A job's concurrency slot, as its enqueue named it. */
export interface KeyedJob {
  readonly queue: string
  readonly key: string
  readonly limit: number
}

/**
 * `lapsedSlotKept`: a lapsed claim keeps its slot even from its own job, so the job's next claim
 * needs a slot of its own — the bug of a slot not handed over (nor freed) when its claim lapses:
 * while the key's processing jobs, the lapsed one among them, fill its limit, the job is never
 * claimed again. Emulated around every claiming call: the claim of such a job is refused as
 * `limited` (by id), or left out of the statement's answer (claimDue, ackAndClaimDue), so no
 * engine ever runs it. The store underneath did claim it, unseen, so its attempts run out and it
 * dies of them without a recorded claim: the real bug would leave it lapsed for ever instead.
 *
 * `keys` is shared by every host's wrapper of one world: each job's slot, from its enqueue.
 */
export function lapsedSlotKeptStore(base: JobStore, inner: JobStore, keys: Map<string, KeyedJob>): JobStore {
  const remember = (job: NewJob): void => {
    if (job.concurrencyKey != null && job.concurrencyLimit !== undefined) keys.set(job.id, { queue: job.queue, key: job.concurrencyKey, limit: job.concurrencyLimit })
  }
  const keyedQueues = (): Set<string> => new Set([...keys.values()].map((slot) => slot.queue))
  // The jobs of `queues` whose claim the buggy store would refuse at `nowMs`: lapsed, of a key
  // whose processing jobs (the lapsed ones among them) fill its limit.
  const kept = async (queues: ReadonlyArray<string>, nowMs: number): Promise<Set<string>> => {
    const refused = new Set<string>()
    for (const queue of queues) {
      if (!keyedQueues().has(queue)) continue
      const processing = await inner.listJobs({ queue, state: 'processing', limit: 1_000, afterId: null })
      const held = new Map<string, number>()
      for (const row of processing) {
        const key = keys.get(row.id)?.key
        if (key !== undefined) held.set(key, (held.get(key) ?? 0) + 1)
      }
      for (const row of processing) {
        const slot = keys.get(row.id)
        if (slot !== undefined && row.deadlineMs !== null && row.deadlineMs <= nowMs && (held.get(slot.key) ?? 0) >= slot.limit) refused.add(row.id)
      }
    }
    return refused
  }
  const queueOf = (id: string): string[] => {
    const slot = keys.get(id)
    return slot === undefined ? [] : [slot.queue]
  }
  return {
    ...base,
    enqueue: async (params, tx) => (remember(params.job), await inner.enqueue(params, tx)),
    async enqueueMany(params, tx) {
      for (const job of params.jobs) remember(job)
      return await inner.enqueueMany(params, tx)
    },
    claim: async (params) => ((await kept(queueOf(params.id), params.nowMs)).has(params.id) ? { kind: 'obsolete', reason: 'limited' } : await inner.claim(params)),
    async claimMany(params) {
      const refused = await kept([...new Set(params.claims.flatMap((claim) => queueOf(claim.id)))], params.nowMs)
      const passed = params.claims.filter((claim) => !refused.has(claim.id))
      const outcomes = passed.length === 0 ? [] : await inner.claimMany({ ...params, claims: passed })
      let next = 0
      return params.claims.map((claim) => (refused.has(claim.id) ? { kind: 'obsolete', reason: 'limited' } : (outcomes[next++] ?? { kind: 'obsolete', reason: 'missing' })))
    },
    async claimDue(params) {
      const refused = await kept([params.queue], params.nowMs)
      return (await inner.claimDue(params)).filter((job) => !refused.has(job.id))
    },
    async ackAndClaimDue(params) {
      const refused = await kept([params.queue], params.nowMs)
      const answer = await inner.ackAndClaimDue(params)
      return { ...answer, claimed: answer.claimed.filter((job) => !refused.has(job.id)) }
    },
  }
}
