/**
 * FairnessChecker — "fair pass": every keyed job takes the place in its queue's fair order that
 * stride scheduling gives it, judged outside the engine from the JobStore boundary. A job of
 * fairness key k enqueued with weight w gets the pass `max(V, last + stride(w))`, where `last` is
 * k's previous pass in the queue and V the claim order key of the head of the queue's pending
 * rows at the job's priority (the queue's virtual now; JobStore.ts, migration 010). The store's
 * pass is read around each keyed enqueue (SimJobStore.ts), and two rules follow from the formula
 * without knowing V itself:
 *
 * - a key steps by its weight: the pass is at least `last + stride(w)` (a pass below it gave the
 *   key more than its weight's share);
 * - only the head lifts a pass: a pass above `last + stride(w)` (or a new key's pass) is V, so no
 *   pending row of the queue at that priority may sort before it. The checker knows some rows
 *   surely pending: jobs enqueued pending with nothing committed on them since (no claim, no
 *   reservation, no handle operation, no sweep of their queue) and no expiry that a claim
 *   statement could act on silently. Such a row whose order key (the later of its pass and its
 *   due time) is below the new pass breaks the rule.
 *
 * - a key is kept: a keyed job the store wrote has a pass (a store that dropped the key would
 *   order it by its due time alone).
 *
 * The implicit key: an unkeyed job of a queue with keys takes the turn of one more key of weight
 * 1 (JobStore.ts's `fairnessKey`), and is judged by the two rules above as that key's job. Whether
 * its queue has keys the checker knows until a sweep (which may forget them): none before the
 * queue's first keyed job was written, so an unkeyed job then has no pass; some from it on until
 * a sweep of the queue, so an unkeyed job then has a pass (a store that ignored the implicit key
 * would order it by its due time, ahead of the keys' turns).
 *
 * A weight the store ignores breaks one rule or the other as soon as a key enqueues again while
 * its previous job waits: stepping by too little breaks the first, by too much the second.
 *
 * Does not: judge the claim order itself (the conformance suites do, on every store), nor jobs
 * whose pass the boundary did not see (a schedule's occurrences: the world registers none): those
 * only sit in the queue, and a pending row the checker does not know can only lower V.
 */
import { fairnessStride } from '../../src/persistence/jobs/JobStore.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'

interface SurelyPending {
  readonly queue: string
  readonly priority: number
  /** The later of its pass and its due time: where the store sorts it within its priority. */
  readonly orderKey: number
}

// The implicit key's name, which no job's key can have (keys are not empty).
const implicitKey = ''

// One key's name in a queue.
const keyName = (queue: string, key: string): string => `${queue}\u0000${key}`

/** The online fairness check of one world. */
export class FairnessChecker {
  readonly #fail: (sentence: string) => void
  // Per (queue, key): the pass the store wrote for the key's latest job.
  readonly #lastPass = new Map<string, number>()
  // Jobs surely pending since their enqueue (see the header), by id.
  readonly #pending = new Map<string, SurelyPending>()
  // Queues with a keyed job written: surely with keys until a sweep of theirs, `true`; after one, `false` (either).
  readonly #keyed = new Map<string, boolean>()

  /** `fail` records a violation of "fair pass". */
  constructor(fail: (sentence: string) => void) {
    this.#fail = fail
  }

  /** Checks one committed JobStore call. */
  observe(record: JobBoundaryRecord): void {
    switch (record.op) {
      case 'enqueue':
        return this.#enqueued(record)
      case 'claim':
      case 'heartbeat':
      case 'ack':
      case 'retry':
      case 'fail':
      case 'cancel':
        this.#pending.delete(record.id)
        return
      case 'ackBatch':
      case 'release':
        for (const claim of record.claims) this.#pending.delete(claim.id)
        return
      case 'reserve':
      case 'confirm':
      case 'unreserve':
        for (const id of record.ids) this.#pending.delete(id)
        return
      case 'sweep':
        for (const [id, row] of this.#pending) if (row.queue === record.queue) this.#pending.delete(id)
        if (this.#keyed.has(record.queue)) this.#keyed.set(record.queue, false)
        return
      default:
        return
    }
  }

  #enqueued(record: JobBoundaryRecord & { readonly op: 'enqueue' }): void {
    const { job } = record
    const dueMs = Math.max(job.runAtMs, record.nowMs)
    const pass = record.fairPass
    if (record.fairnessKey !== undefined && pass === undefined) this.#fail(`job ${job.id} of ${job.queue} was enqueued with fairness key ${record.fairnessKey}, yet the store keeps no pass for it: the key was dropped`)
    if (record.fairnessKey !== undefined && pass !== undefined) {
      this.#judge(record, record.fairnessKey, record.fairnessWeight ?? 1, pass)
      this.#keyed.set(job.queue, true)
    }
    if (record.fairnessKey === undefined) {
      const keyed = this.#keyed.get(job.queue)
      if (keyed === undefined && pass !== undefined) this.#fail(`unkeyed job ${job.id} of ${job.queue} got pass ${pass}, yet no keyed job of its queue was written: a queue without keys gave it the implicit key's turn`)
      if (keyed === true && pass === undefined) this.#fail(`unkeyed job ${job.id} of ${job.queue} got no pass, yet its queue has keys: the implicit key was ignored`)
      if (pass !== undefined) this.#judge(record, implicitKey, 1, pass)
    }
    if (job.state === 'pending' && job.expiresAtMs === null) {
      this.#pending.set(job.id, { queue: job.queue, priority: job.priority, orderKey: pass === undefined ? dueMs : Math.max(pass, dueMs) })
    }
  }

  // Judges the pass `pass` the store wrote for the job of `record`, of `key` with `weight`.
  #judge(record: JobBoundaryRecord & { readonly op: 'enqueue' }, key: string, weight: number, pass: number): void {
    const { job } = record
    const stride = fairnessStride(weight)
    const name = keyName(job.queue, key)
    const last = this.#lastPass.get(name)
    this.#lastPass.set(name, pass)
    const what = `job ${job.id} of ${job.queue} (${key === implicitKey ? 'the implicit key' : `key ${key}`}, weight ${weight}, stride ${stride}) got pass ${pass}`
    if (last !== undefined && pass < last + stride) {
      this.#fail(`${what}, below its key's last pass ${last} + its stride: the key ran ahead of its weight's share`)
      return
    }
    if (last !== undefined && pass === last + stride) return
    // The pass is the head's order key: no surely pending row of the priority sorts before it.
    for (const [id, row] of this.#pending) {
      if (row.queue === job.queue && row.priority === job.priority && row.orderKey < pass) {
        const from = last === undefined ? 'as a new key' : `past its key's last pass ${last} + its stride`
        this.#fail(`${what} ${from}, yet pending job ${id} sorts at ${row.orderKey}, ahead of it: the key was put behind the head`)
        return
      }
    }
  }
}
