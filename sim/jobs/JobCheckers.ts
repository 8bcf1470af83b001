/**
 * JobCheckers — the job contract's job invariants, judged outside the engine from the JobStore boundary
 * (what committed, in commit order, with the time the engine stamped on each call and the
 * world's clock at commit) and from what the clients saw. Each violation is a sentence.
 *
 * - one valid claim: a claim may commit only when no other claim of the job is still within its
 *   deadline (judged at the new claim's stamp), and a claim token's operations are accepted only
 *   while it is the job's current claim and the job is live;
 * - deadline: no handle operation (ack, heartbeat, retry, fail, a batch ack) succeeds when it was
 *   issued at or after its claim's deadline — by the store's record and by the deadline the engine
 *   reported to the client. An operation issued in time whose commit landed after the deadline
 *   (the call was in flight) is counted as `landedLate`, not judged: the store decides at the
 *   caller's stamp (every store operation takes `nowMs`), and the token check above is what keeps
 *   a reclaim safe from it;
 * - attempt budget: no claim, handle or `getJob` shows attempts above the job's maxAttempts, and
 *   every claim counts exactly one attempt;
 * - holder settles: an ack, heartbeat, retry or fail — alone, in a batch, or riding on a claim —
 *   is accepted only for the job's current claim token (its holder's);
 * - one live per key: no enqueue (alone or in a batch) commits a job whose key a live job of its
 *   queue holds;
 * - concurrency per key: no claim (nor an enqueue that claims) commits while its job's concurrency
 *   key would then have more valid claims of its queue than the limit the job was enqueued with —
 *   judged at the claim's stamp, across every engine, not counting a claim at its job's attempt
 *   budget whose deadline a statement committed before had already passed in its stamp (the
 *   exhaustion rule may have buried that job there, unseen);
 * - none stranded (at the end, after the final sweep): every job whose enqueue committed is acked,
 *   cancelled or dead, consistently with what committed; sorted into honest categories.
 *
 * It also tells the world which jobs are due (claimable now, with no valid claim) and since when,
 * for the prompt-delivery check (JobsWorld.ts), and each job's current claim, for the handler
 * checkers (HandlerCheckers.ts).
 *
 * Does not: read the engine's memory, or decide which dead jobs are "right" beyond their budget.
 *
 * Length: past 400 lines because every rule here reads one model of each job's life (its claim,
 * attempts, readiness and slot) that commit order builds; the handler, control, ownership and
 * rate checkers, which need less of it, live in files of their own.
 */
import { deadReasonExhausted, deadReasonExpired, isExhausted } from '../../src/domain/JobRules.ts'
import { jobDueScanIntervalMs } from '../../src/kernel/Limits.ts'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { ConcurrencySlot, JobBoundaryRecord } from './JobBoundary.ts'
import { controlCheckerNames } from './ControlCheckers.ts'
import { dispatchCheckerNames } from './DispatchChecker.ts'
import { idlePollCheckerNames } from '../core/IdlePollChecker.ts'
import { giveBackCheckerNames } from './GiveBackChecker.ts'

/** The job checkers, the ownership checker (OwnershipChecker.ts), the dispatch checker (DispatchChecker.ts), the give-back checker (GiveBackChecker.ts) and the Matching checkers the end-to-end world also runs, for verdicts. */
export const jobCheckerNames = [
  'one valid claim', 'deadline', 'attempt budget', 'none stranded', 'owner delivers', 'owner sees nobody', 'holder settles', 'one live per key',
  'concurrency per key', 'rate limit', 'fair pass', 'claims fenced', 'handler once per claim', 'heartbeat keeps claim', 'claims reach a worker', 'stop releases', 'prompt delivery', ...controlCheckerNames, ...dispatchCheckerNames, ...idlePollCheckerNames, ...giveBackCheckerNames, 'matching', 'other',
] as const


/** One job checker's name. */
export type JobCheckerName = (typeof jobCheckerNames)[number]

/** Where every enqueued job ended, Jepsen-style. */
export interface JobsReport {
  /** Enqueues whose caller got the id. */
  readonly enqueued: number
  /** Enqueues that committed but whose caller never heard (crash or error): ambiguous, still owed. */
  readonly recovered: number
  readonly acked: number
  /** Acks that committed but whose caller never heard. */
  readonly ackedUnheard: number
  readonly cancelled: number
  readonly cancelledUnheard: number
  readonly dead: { readonly failed: number; readonly exhausted: number; readonly expired: number }
  /** Jobs claimed more than once (at-least-once: allowed and counted). */
  readonly reclaimed: number
  /** Handle operations issued before their deadline that committed after it (see the header). */
  readonly landedLate: number
  readonly stranded: ReadonlyArray<string>
}

interface Track {
  readonly job: JobRecord
  life: 'live' | 'acked' | 'cancelled' | 'dead'
  attempts: number
  /** When the job is (or was) claimable without a claim: enqueue's max(runAt, now), a retry's runAt. */
  readyAtMs: number
  claim: { readonly token: string; deadlineMs: number } | null
  /** A due-time pass reserved the row for Matching before the heal, until then (its pass may have died with its host): not claimable before. */
  heldUntilMs: number | null
  claims: number
  heard: boolean
  endHeard: boolean
  /** The job's concurrency key and limit (absent: it takes no slot). */
  readonly slot?: ConcurrencySlot
  /** A claim its key's limit refused made it due again then (null: none since its last claim). */
  parkedUntilMs?: number | null
}

const violationsMax = 50

// One concurrency slot's name: the queue and the key.
const slotName = (queue: string, key: string): string => `${queue}\u0000${key}`

/** The online job checks plus the final audit. */
export class JobCheckers {
  readonly violations: string[] = []
  readonly counts = Object.fromEntries(jobCheckerNames.map((name) => [name, 0])) as Record<JobCheckerName, number>
  /** The violations (also in `violations`) of checkers on the known-failing list. */
  readonly knownFailing = new Set<string>()
  readonly #jobs = new Map<string, Track>()
  readonly #tolerated: ReadonlyArray<JobCheckerName>

  /** True when `checker` is known failing on this world's store. */
  knownFailingChecker(checker: JobCheckerName): boolean {
    return this.#tolerated.includes(checker)
  }

  /** `tolerated`: the checkers known failing on this world's store (KnownEngineFailures.ts), counted apart. */
  constructor(tolerated: ReadonlyArray<JobCheckerName> = []) {
    this.#tolerated = tolerated
  }
  #landedLate = 0
  #healedAtMs: number | null = null
  // The commit time of the record being observed, and per (queue, concurrency key) when a claim of the key last ended.
  #committedAtMs = 0
  readonly #slotFreedAtMs = new Map<string, number>()
  // The latest stamp of any committed call: a statement stamped past a claim's deadline may have
  // buried its job by the exhaustion rule (which no record names).
  #stampMaxMs = 0

  /** Faults are off from now on: a reservation made after this is the engine's own, judged as due. */
  healed(nowMs: number): void {
    this.#healedAtMs = nowMs
  }

  /** The queue of a job whose enqueue committed. */
  queueOf(id: string): string | undefined {
    return this.#jobs.get(id)?.job.queue
  }

  /** The expiry of a job whose enqueue committed (null: never, or unknown). */
  expiresAtOf(id: string): number | null {
    return this.#jobs.get(id)?.job.expiresAtMs ?? null
  }

  /** The current claim of a live job, or null (no claim, or the job ended). */
  claimOf(id: string): { readonly token: string; readonly deadlineMs: number } | null {
    const track = this.#jobs.get(id)
    return track === undefined || track.life !== 'live' ? null : track.claim
  }

  /**
   * The jobs due at `nowMs` — live, unexpired, within budget, runnable, with no valid claim, and
   * (for a job waiting for a slot of its concurrency key) with a slot free — each with its queue
   * and the moment it became due: its ready time, its lapsed deadline, when its key's last claim
   * ended, or when a claim its key's limit refused made it due again (one scan later,
   * MemoryConcurrencySlots.ts).
   */
  dueJobs(nowMs: number): Array<{ readonly id: string; readonly queue: string; readonly dueSinceMs: number }> {
    const due: Array<{ readonly id: string; readonly queue: string; readonly dueSinceMs: number }> = []
    const held = this.#heldSlots()
    for (const [id, track] of this.#jobs) {
      if (track.life !== 'live' || track.attempts >= track.job.maxAttempts) continue
      if (track.job.expiresAtMs !== null && track.job.expiresAtMs <= nowMs) continue
      let slotFreeSinceMs = Number.NEGATIVE_INFINITY
      if (track.slot !== undefined && track.claim === null) {
        const slot = slotName(track.job.queue, track.slot.key)
        if ((held.get(slot) ?? 0) >= track.slot.limit) continue
        slotFreeSinceMs = Math.max(this.#slotFreedAtMs.get(slot) ?? Number.NEGATIVE_INFINITY, track.parkedUntilMs ?? Number.NEGATIVE_INFINITY)
      }
      const dueSinceMs = Math.max(track.readyAtMs, track.claim?.deadlineMs ?? Number.NEGATIVE_INFINITY, track.heldUntilMs ?? Number.NEGATIVE_INFINITY, slotFreeSinceMs)
      if (dueSinceMs <= nowMs) due.push({ id, queue: track.job.queue, dueSinceMs })
    }
    return due
  }

  // Slots held per (queue, concurrency key): live jobs with a claim, valid or lapsed (a lapsed
  // claim keeps its slot until its job is claimed again or dies).
  #heldSlots(): Map<string, number> {
    const held = new Map<string, number>()
    for (const track of this.#jobs.values()) {
      if (track.slot === undefined || track.life !== 'live' || track.claim === null) continue
      const slot = slotName(track.job.queue, track.slot.key)
      held.set(slot, (held.get(slot) ?? 0) + 1)
    }
    return held
  }

  // A claim of `track` ended (settled, given back, or its job ended): its key's slot is free now.
  #slotFreed(track: Track): void {
    if (track.slot !== undefined && track.claim !== null) this.#slotFreedAtMs.set(slotName(track.job.queue, track.slot.key), this.#committedAtMs)
  }

  /** The live jobs that may still be delivered after `nowMs` (unexpired, within budget), as `id (state)`. */
  liveDeliverable(nowMs: number): string[] {
    const live: string[] = []
    for (const [id, track] of this.#jobs) {
      if (track.life !== 'live') continue
      if (track.job.expiresAtMs !== null && track.job.expiresAtMs <= nowMs) continue
      // A claim that lapsed at the job's budget killed it (the exhaustion rule), unseen here.
      const claimed = track.claim !== null && track.claim.deadlineMs > nowMs
      if (track.attempts < track.job.maxAttempts || claimed) live.push(`${id} (${claimed ? 'claimed' : `ready at ${track.readyAtMs}`}, attempt ${track.attempts} of ${track.job.maxAttempts})`)
    }
    return live
  }

  /** Ids of every job whose enqueue committed, in commit order. */
  jobIds(): string[] {
    return [...this.#jobs.keys()]
  }

  /** Records a violation under `checker` (bounded: the first ones tell the story). */
  fail(checker: JobCheckerName, sentence: string): void {
    this.counts[checker]++
    if (this.violations.length >= violationsMax) return
    // Named, so that a reader of a seed's violations (and of its timeline) knows which rule broke.
    const named = `${checker}: ${sentence}`
    this.violations.push(named)
    if (this.#tolerated.includes(checker)) this.knownFailing.add(named)
  }

  /** Checks one committed JobStore call. */
  observe(record: JobBoundaryRecord): void {
    this.#committedAtMs = record.committedAtMs
    this.#stampMaxMs = Math.max(this.#stampMaxMs, record.nowMs)
    if (record.nowMs > record.committedAtMs) this.fail('deadline', `${record.hostId} stamped ${record.op} at ${record.nowMs}, after the clock's ${record.committedAtMs}`)
    switch (record.op) {
      case 'enqueue': {
        const job = record.job
        // Eager dispatch inserts a job already claimed for a waiting worker: enqueue and claim at once.
        if (job.state === 'processing' && job.claimToken !== null) {
          if (job.attempts !== 1 || job.claimedAtMs !== record.nowMs) this.fail('attempt budget', `job ${job.id} enqueued claimed with ${job.attempts} attempts at ${String(job.claimedAtMs)}, not 1 at ${record.nowMs}`)
          if (job.expiresAtMs !== null && job.expiresAtMs <= record.nowMs) this.fail('one valid claim', `job ${job.id} enqueued claimed at ${record.nowMs} though it expires at ${job.expiresAtMs}`)
          if (job.deadlineMs !== record.nowMs + job.visibilityTimeoutMs) this.fail('deadline', `job ${job.id} enqueued claimed at ${record.nowMs} with deadline ${job.deadlineMs}, not now + its visibility ${job.visibilityTimeoutMs} ms`)
          this.#keyFree(job, record.nowMs, record.committedAtMs)
          const track: Track = { job, life: 'live', attempts: 1, readyAtMs: record.nowMs, claim: { token: job.claimToken, deadlineMs: job.deadlineMs as number }, claims: 1, heldUntilMs: null, heard: false, endHeard: false, ...(record.slot === undefined ? {} : { slot: record.slot }) }
          this.#jobs.set(job.id, track)
          this.#withinLimit(track, record.nowMs)
          return
        }
        if (job.attempts !== 0 || job.state !== 'pending') this.fail('attempt budget', `job ${job.id} enqueued as ${job.state} with ${job.attempts} attempts`)
        this.#keyFree(job, record.nowMs, record.committedAtMs)
        this.#jobs.set(job.id, { job, life: 'live', attempts: 0, readyAtMs: Math.max(job.runAtMs, record.nowMs), claim: null, claims: 0, heldUntilMs: null, heard: false, endHeard: false, ...(record.slot === undefined ? {} : { slot: record.slot }) })
        return
      }
      case 'claim':
        return this.#claimed(record)
      case 'heartbeat':
        if (record.renewed === null) return
        if (this.#accepted('heartbeat', record)) {
          const track = this.#jobs.get(record.id) as Track
          const expected = record.nowMs + (record.extendMs ?? track.job.visibilityTimeoutMs)
          if (record.renewed.deadlineMs !== expected) this.fail('deadline', `job ${record.id} heartbeat at ${record.nowMs} set deadline ${record.renewed.deadlineMs}, not ${expected}`)
          if (track.claim !== null) track.claim.deadlineMs = record.renewed.deadlineMs as number
        }
        return
      case 'ack':
      case 'fail':
        if (record.ok && this.#accepted(record.op, record)) this.#end(record.id, record.op === 'ack' ? 'acked' : 'dead')
        return
      case 'retry': {
        if (record.outcome === null || !this.#accepted('retry', record)) return
        const track = this.#jobs.get(record.id) as Track
        if (record.outcome.kind === 'dead') {
          if (track.attempts < track.job.maxAttempts) this.fail('attempt budget', `job ${record.id} was dead-lettered by a retry at attempt ${track.attempts} of ${track.job.maxAttempts}`)
          this.#end(record.id, 'dead')
        } else {
          this.#slotFreed(track)
          track.claim = null
          track.readyAtMs = record.outcome.runAtMs
        }
        return
      }
      case 'ackBatch': {
        if (record.count !== record.ackedIds.length) this.fail('one valid claim', `ackBatch of ${record.claims.length} reported ${record.count} acked, but ${record.ackedIds.length} rows went`)
        for (const id of record.ackedIds) {
          // A batch may name one job under several claims (a lapsed handle and its reclaim): the current one is the one judged.
          const named = record.claims.filter((c) => c.id === id)
          const claim = named.find((c) => c.claimToken === this.#jobs.get(id)?.claim?.token) ?? named[0]
          if (claim !== undefined && this.#accepted('ackBatch', { ...record, ...claim })) this.#end(id, 'acked')
        }
        return
      }
      case 'release':
        for (const id of record.releasedIds) {
          // The first claim named per job is the one the store judged.
          const claim = record.claims.find((c) => c.id === id)
          if (claim === undefined || !this.#accepted('release', { ...record, ...claim })) continue
          // Back to pending with the attempt the claim counted given back: the next claim counts it again.
          const track = this.#jobs.get(id) as Track
          this.#slotFreed(track)
          track.claim = null
          track.attempts = Math.max(0, track.attempts - 1)
          // Due again from the release on: while claimed it was nobody's to deliver.
          track.readyAtMs = Math.max(track.readyAtMs, record.committedAtMs)
        }
        return
      case 'cancel': {
        const track = this.#jobs.get(record.id)
        if (!record.ok || track === undefined) return
        if (track.life !== 'live') this.fail('one valid claim', `job ${record.id} cancelled at ${record.committedAtMs} though it was ${track.life}`)
        this.#end(record.id, 'cancelled')
        return
      }
      case 'sweep': {
        // Every live job of the queue past its expiry dies in a sweep (some may already be dead
        // by the exhaustion rule, which the checkers cannot see): at most this many.
        const expired = [...this.#jobs.values()].filter((t) => t.job.queue === record.queue && t.life === 'live' && t.job.expiresAtMs !== null && t.job.expiresAtMs <= record.nowMs)
        if (record.dead > expired.length) this.fail('none stranded', `sweep of ${record.queue} at ${record.nowMs} moved ${record.dead} jobs to dead, but only ${expired.length} live jobs had expired`)
        for (const track of expired) this.#end(track.job.id, 'dead')
        return
      }
      case 'getJob':
        return this.#seen(record.id, record.job, `getJob at ${record.committedAtMs}`)
      case 'reserve':
      case 'confirm':
      case 'unreserve':
        return this.#reserved(record)
    }
  }

  /** A client's handle operation returned; `deadlineMs` is what the engine had reported when it was issued. */
  clientOp(op: string, id: string, issuedAtMs: number, deadlineMs: number, succeeded: boolean): void {
    if (succeeded && issuedAtMs >= deadlineMs) this.fail('deadline', `job ${id} ${op} succeeded though issued at ${issuedAtMs}, at or after its deadline ${deadlineMs} (as the engine reported it)`)
    if (succeeded && (op === 'ack' || op === 'ackBatch')) {
      const track = this.#jobs.get(id)
      if (track !== undefined && track.life === 'acked') track.endHeard = true
    }
  }

  /** A client's `ackBatch` of `ids` (with the deadlines the engine had reported) returned `count`. */
  clientBatch(ids: ReadonlyArray<string>, issuedAtMs: number, deadlinesMs: ReadonlyArray<number>, count: number): void {
    const inTime = deadlinesMs.filter((deadlineMs) => issuedAtMs < deadlineMs).length
    if (count > inTime) this.fail('deadline', `ackBatch of ${ids.join(', ')} issued at ${issuedAtMs} acked ${count}, but only ${inTime} of their deadlines (${deadlinesMs.join(', ')}) were ahead`)
    for (const id of ids) {
      const track = this.#jobs.get(id)
      if (track !== undefined && track.life === 'acked') track.endHeard = true
    }
  }

  /** A client's claim returned a handle. */
  clientClaimed(id: string, attempts: number, maxAttempts: number): void {
    if (attempts > maxAttempts) this.fail('attempt budget', `job ${id} handed to a worker at attempt ${attempts} of ${maxAttempts}`)
  }

  /** A client's enqueue returned `id`; a client's cancel of `id` returned true. */
  clientEnqueued(id: string): void {
    const track = this.#jobs.get(id)
    if (track === undefined) this.fail('none stranded', `enqueue returned ${id}, but no enqueue of it committed`)
    else track.heard = true
  }

  /** A client's cancel returned true. */
  clientCancelled(id: string): void {
    const track = this.#jobs.get(id)
    if (track !== undefined && track.life === 'cancelled') track.endHeard = true
  }

  /**
   * The final audit: `final` holds each committed job's row after the final sweep (null: gone).
   * `judgeStranded` is false when the run stopped at an earlier violation and skipped the final
   * phase: live jobs are then expected, not stranded.
   */
  audit(final: ReadonlyMap<string, JobRecord | null>, judgeStranded: boolean, nowMs: number): JobsReport {
    let enqueued = 0
    let recovered = 0
    let acked = 0
    let ackedUnheard = 0
    let cancelled = 0
    let cancelledUnheard = 0
    let reclaimed = 0
    const dead = { failed: 0, exhausted: 0, expired: 0 }
    const stranded: string[] = []
    for (const [id, track] of this.#jobs) {
      if (track.heard) enqueued++
      else recovered++
      if (track.claims > 1) reclaimed++
      const job = final.get(id) ?? null
      this.#seen(id, job, 'the final audit')
      if (job === null) {
        if (track.life === 'acked' && track.endHeard) acked++
        else if (track.life === 'acked') ackedUnheard++
        else if (track.life === 'cancelled' && track.endHeard) cancelled++
        else if (track.life === 'cancelled') cancelledUnheard++
        continue
      }
      // A lapsed claim at its budget died at its deadline (the exhaustion rule holds whenever one
      // looks), though no statement has buried the row yet: the sweep buries only expired rows.
      if (job.state === 'processing' && isExhausted(job, nowMs)) {
        dead.exhausted++
        continue
      }
      if (job.state === 'dead') {
        if (job.lastError === deadReasonExhausted) dead.exhausted++
        else if (job.lastError === deadReasonExpired) dead.expired++
        else dead.failed++
        continue
      }
      if (!judgeStranded) continue
      stranded.push(id)
      if (stranded.length <= 5) this.fail('none stranded', `job ${id} of ${job.queue} stranded: still ${job.state} after the final sweep (attempts ${job.attempts} of ${job.maxAttempts}, runAt ${job.runAtMs}, expiresAt ${job.expiresAtMs ?? 'never'})`)
    }
    if (stranded.length > 5) this.fail('none stranded', `… and ${stranded.length - 5} more jobs stranded`)
    return { enqueued, recovered, acked, ackedUnheard, cancelled, cancelledUnheard, dead, reclaimed, landedLate: this.#landedLate, stranded }
  }

  // A row reserved for Matching before the heal is not claimable until its reservation ends (a
  // pass that died between reserve and confirm leaves it for `jobDeliveryRetryMs`); a confirmed
  // row is with Matching, which must deliver it; an unreserved one is due again.
  #reserved(record: Extract<JobBoundaryRecord, { op: 'reserve' | 'confirm' | 'unreserve' }>): void {
    for (const id of record.ids) {
      const track = this.#jobs.get(id)
      if (track === undefined) continue
      const beforeHeal = this.#healedAtMs === null || record.committedAtMs < this.#healedAtMs
      track.heldUntilMs = record.op === 'reserve' && beforeHeal ? record.untilMs : null
    }
  }

  #claimed(record: Extract<JobBoundaryRecord, { op: 'claim' }>): void {
    const track = this.#jobs.get(record.id)
    const outcome = record.outcome
    if (outcome.kind === 'obsolete' && (outcome.reason === 'dead' || outcome.reason === 'exhausted') && track !== undefined) this.#end(record.id, 'dead')
    if (outcome.kind === 'obsolete' && outcome.reason === 'limited' && track !== undefined) track.parkedUntilMs = record.nowMs + jobDueScanIntervalMs
    if (outcome.kind !== 'claimed') return
    const job = outcome.job
    if (track === undefined) return this.fail('one valid claim', `job ${record.id} claimed at ${record.nowMs}, but no enqueue of it committed`)
    if (track.life !== 'live') this.fail('one valid claim', `job ${record.id} claimed by ${record.claimToken} at ${record.nowMs} after it was ${track.life}`)
    if (track.claim !== null && track.claim.deadlineMs > record.nowMs) {
      this.fail('one valid claim', `job ${record.id} claimed by ${record.claimToken} at ${record.nowMs} while claim ${track.claim.token} was valid until ${track.claim.deadlineMs}`)
    }
    if (job.attempts !== track.attempts + 1) this.fail('attempt budget', `job ${record.id} claim at ${record.nowMs} counted attempt ${job.attempts} after ${track.attempts}`)
    if (job.attempts > job.maxAttempts) this.fail('attempt budget', `job ${record.id} claimed for attempt ${job.attempts} of ${job.maxAttempts}`)
    if (job.expiresAtMs !== null && job.expiresAtMs <= record.nowMs) this.fail('one valid claim', `job ${record.id} claimed at ${record.nowMs} after it expired at ${job.expiresAtMs}`)
    if (job.deadlineMs !== record.nowMs + track.job.visibilityTimeoutMs) this.fail('deadline', `job ${record.id} claimed at ${record.nowMs} with deadline ${job.deadlineMs}, not now + its visibility ${track.job.visibilityTimeoutMs} ms`)
    track.attempts = job.attempts
    track.heldUntilMs = null
    track.claims++
    track.claim = { token: record.claimToken, deadlineMs: job.deadlineMs as number }
    track.parkedUntilMs = null
    this.#withinLimit(track, record.nowMs)
  }

  // `track` was just claimed at `nowMs`: its key's valid claims, this one included, within its
  // limit. A claim stamped late may commit after a statement stamped past another claim's deadline
  // buried that claim's job at its attempt budget: such a claim no longer holds its slot.
  #withinLimit(track: Track, nowMs: number): void {
    const slot = track.slot
    if (slot === undefined) return
    const buried = (other: Track): boolean => other.attempts >= other.job.maxAttempts && (other.claim?.deadlineMs ?? 0) <= this.#stampMaxMs
    const valid = [...this.#jobs.values()].filter(
      (other) => other.life === 'live' && other.slot?.key === slot.key && other.job.queue === track.job.queue && other.claim !== null && other.claim.deadlineMs > nowMs && (other === track || !buried(other)),
    )
    if (valid.length <= slot.limit) return
    this.fail('concurrency per key', `job ${track.job.id} of ${track.job.queue} claimed at ${nowMs} with concurrency key ${slot.key} (limit ${slot.limit}) while ${valid.length} claims of the key were valid: ${valid.map((other) => other.job.id).join(', ')}`)
  }

  // A handle operation the store accepted: was its claim current, live and within its deadline?
  #accepted(op: string, record: { readonly id: string; readonly claimToken: string; readonly nowMs: number; readonly committedAtMs: number }): boolean {
    const track = this.#jobs.get(record.id)
    if (track === undefined) {
      this.fail('one valid claim', `job ${record.id} ${op} accepted, but no enqueue of it committed`)
      return false
    }
    const claim = track.claim
    if (track.life !== 'live') this.fail('one valid claim', `job ${record.id} ${op} by ${record.claimToken} accepted at ${record.nowMs} after it was ${track.life}`)
    else if (claim === null || claim.token !== record.claimToken) {
      this.fail('holder settles', `job ${record.id} ${op} accepted for claim ${record.claimToken}, which is not its current claim (${claim?.token ?? 'none'})`)
    } else if (record.nowMs >= claim.deadlineMs) {
      this.fail('deadline', `job ${record.id} ${op === 'ack' || op === 'ackBatch' ? 'acked' : op} after its deadline ${claim.deadlineMs} at ${record.nowMs}`)
    } else {
      if (record.committedAtMs >= claim.deadlineMs) this.#landedLate++
      return true
    }
    return false
  }

  // An enqueue committed `job` at `committedAtMs`: no other live job of its queue may hold its key.
  #keyFree(job: JobRecord, nowMs: number, committedAtMs: number): void {
    if (job.key === null) return
    for (const [id, track] of this.#jobs) {
      if (id === job.id || track.life !== 'live' || track.job.queue !== job.queue || track.job.key !== job.key) continue
      // A lapsed claim at its budget died at its deadline (the exhaustion rule), unseen here; the
      // key is judged as the store holds it at the commit, which may come long after the stamp.
      if (track.claim !== null && track.attempts >= track.job.maxAttempts && track.claim.deadlineMs <= committedAtMs) continue
      // So did a keyed job's lapsed claim past its expiry, which a due-time pass buries, unseen here too.
      if (track.claim !== null && track.slot !== undefined && track.claim.deadlineMs <= committedAtMs && track.job.expiresAtMs !== null && track.job.expiresAtMs <= committedAtMs) continue
      {
        this.fail('one live per key', `job ${job.id} of ${job.queue} enqueued at ${nowMs} with key ${job.key}, which live job ${id} holds`)
        return
      }
    }
  }

  #end(id: string, life: Track['life']): void {
    const track = this.#jobs.get(id)
    if (track === undefined || track.life !== 'live') return
    this.#slotFreed(track)
    track.life = life
    track.claim = null
  }

  // A row as the store showed it: within budget, and consistent with what committed.
  #seen(id: string, job: JobRecord | null, where: string): void {
    const track = this.#jobs.get(id)
    if (track === undefined) return
    if (job === null) {
      if (track.life === 'live' || track.life === 'dead') this.fail('none stranded', `job ${id} vanished (${where}): gone from the store, but no ack or cancel of it committed`)
      return
    }
    if (job.attempts > job.maxAttempts) this.fail('attempt budget', `job ${id} shows attempts ${job.attempts} of ${job.maxAttempts} (${where}, ${job.state})`)
    if (track.life === 'acked' || track.life === 'cancelled' || (track.life === 'dead' && job.state !== 'dead')) this.fail('none stranded', `job ${id} is ${job.state} (${where}) though it was ${track.life}`)
    if (job.state === 'dead') this.#end(id, 'dead')
    else if (job.state === 'processing' && track.claim !== null && job.claimToken !== track.claim.token) {
      this.fail('one valid claim', `job ${id} shows claim ${job.claimToken} (${where}), but the last committed claim was ${track.claim.token}`)
    }
  }
}
