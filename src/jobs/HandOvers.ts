/**
 * HandOvers — this engine's side of the hand-over at enqueue across engines
 * (persistence/jobs/HandOver.ts), both ways:
 * - **waiting**: a claim of this engine parked in its queue's line (Claimer.ts's `waitInLine`)
 *   registers as a waiter in the store under the fence of the queue's partition this engine owns;
 *   finding none idle, it registers as many tokens as claims of the queue wait here, in one
 *   statement, and pools the spares, so a stream of hand-overs costs one registration per that
 *   many jobs (a token taken while no claim holds it goes to the claim waiting longest).
 *   When it stops waiting its registration stays in the store, idle in the queue's pool here,
 *   and the loop's next claim takes it up again with no statement; registrations last
 *   `waiterLeaseMs` and are taken back when the queue's workers here stop or its partitions leave
 *   this engine. A `handed` message
 *   for a token hands the job to the claim holding it if it still waits, else to the claim of
 *   the queue waiting longest (or keeps it for the next, as any hand-over: Dispatch.ts);
 * - **enqueueing**: an enqueue of this engine for a queue it does not deliver alone (a producer's)
 *   asks the store for a waiter; a job the store handed over without raising the message itself
 *   (the memory store) is announced here, over the bus.
 *
 * An idle worker loop costs about one statement per lease; a drain, whose claims never park,
 * none; a stream of hand-overs, about one per as many jobs as claims wait here. A `handed`
 * message for an idle registration is handed to the claim waiting longest, or kept for the next
 * to join (released by the next pass if none does). A registration taken back that the store no
 * longer has was taken by an enqueue whose message has not come (it is on its way, or lost): that
 * job goes back to the store at once (`releaseHandedOver`) and its message is dropped should it
 * come, so an engine that stops waiting as a producer hands it a job leaves the job to the others.
 * A message lost while its registration is kept here costs the job at most one claim lapse —
 * it is claimed under a token nobody holds — never the job.
 *
 * Invariants: registrations here are at most twice the most claims of a queue that waited at once
 * (a park takes an idle one first, and a batch is as large as the claims attached plus one);
 * every one is either attached to one claim or idle in its queue's pool; a token taken back is
 * remembered a lease at most; no timer.
 *
 * Does not: choose the job a waiter gets (the producer's statement does), or retry.
 */
import { isMatchboxError } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { randomId } from '../kernel/Ids.ts'
import { waiterLeaseMs, waiterTokensMax } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import type { Bus } from '../persistence/bus/Bus.ts'
import { handedJobOf, handOverMessage, isHandOverCandidate } from '../persistence/jobs/HandOver.ts'
import type { ClaimFence, EnqueueAnswer, JobStore, NewJob } from '../persistence/jobs/JobStore.ts'
import type { Dispatches, PlaceInLine } from './Dispatch.ts'
import type { DueDriver } from './DueDriver.ts'
import type { QueueRouting } from './QueueRouting.ts'

/** A claim's registration as a waiter: `withdraw` once it stops waiting (the registration goes back to its queue's pool). */
export interface WaiterRegistration {
  withdraw(): void
}

/** The hand-overs at enqueue of one engine in a group. */
export interface HandOvers {
  /**
   * Registers the claim at `place` in `queue`'s line as a waiter until at least `untilMs`: with
   * an idle registration of the queue that lasts that long (no statement), else a new one for
   * `waiterLeaseMs`.
   */
  register(queue: string, place: PlaceInLine, untilMs: number): WaiterRegistration
  /**
   * Takes the queue's idle registrations back from the store (its workers here stopped, or its
   * partitions left this engine, whose fence they carry); resolves once they are.
   */
  takeBackIdle(queue: string): Promise<void>
  /** An enqueue of `job` that may go to another engine's waiter: the store's answer, or null when this engine does not ask (it delivers the queue alone, or the job may not be handed over). */
  enqueue(job: NewJob, nowMs: number): Promise<EnqueueAnswer | null>
  /** A host message: true when it was a `handed` message (taken care of here). */
  onMessage(message: JsonValue): boolean
}

/** The parts of its engine the hand-overs use (the engine's runtime, Runtime.ts). */
export interface HandOverEngine {
  readonly hostId: string
  /** Draws waiter tokens. */
  readonly random: Random
  readonly jobStore: JobStore
  readonly routing: Pick<QueueRouting, 'ownsEvery'>
  readonly driver: Pick<DueDriver, 'notifyDue'>
  readonly dispatch: Pick<Dispatches, 'of'>
  /** Tells the queue's claims here and on its other owners that a job is due (Runtime.ts). */
  announceDue(queue: string, dueMs: number, byEnqueue: boolean): void
  /** Whole milliseconds of the injected clock. */
  now(): number
}

/** What the hand-overs need besides their engine. */
export interface HandOversOptions {
  readonly bus: Bus
  /** True when the store raises the `handed` message in the enqueue's own statement (SQL stores). */
  readonly storeSends: boolean
  /**
   * Runs `write` under the range fence of `queue`'s partition this engine owns (StoreClaims.ts's
   * `fenced`), or `otherwise` when it cannot give one.
   */
  readonly fenced: <T>(queue: string, write: (fence: ClaimFence) => Promise<T>, otherwise: () => Promise<T>) => Promise<T>
  /** Failures that are not catalogue errors (defects). */
  readonly onDefect: (defect: unknown) => void
}

/** Makes the hand-overs of the engine `engineOf` gives (read only once calls come: the engine is built after). */
export function makeHandOvers(engineOf: () => HandOverEngine, options: HandOversOptions): HandOvers {
  const books: HandOverBooks = {
    engineOf,
    options,
    registrations: new Map(),
    pools: new Map(),
    takenBack: new Map(),
    swallow: (error) => {
      if (!isMatchboxError(error)) options.onDefect(error)
    },
  }
  return {
    register: (queue, place, untilMs) => register(books, queue, place, untilMs),
    async takeBackIdle(queue) {
      const pooled = books.pools.get(queue) ?? []
      books.pools.delete(queue)
      if (pooled.length > 0) await takeBack(books, engineOf(), pooled)
    },
    async enqueue(job, nowMs) {
      const engine = engineOf()
      if (engine.routing.ownsEvery(job.queue) || !isHandOverCandidate(job, nowMs, Buffer.byteLength(JSON.stringify(job.payload), 'utf8'))) return null
      const answer = await engine.jobStore.enqueue({ job, nowMs, toWaiter: true })
      if (answer.handedTo !== undefined && !options.storeSends) {
        options.bus.send(answer.handedTo.hostId, handOverMessage(job, nowMs, answer.claimToken as string)).catch(books.swallow)
      }
      return answer
    },
    onMessage: (message) => onHandedMessage(books, message),
  }
}

// One engine's hand-over books.
interface HandOverBooks {
  readonly engineOf: () => HandOverEngine
  readonly options: HandOversOptions
  // Registrations by token: attached to a claim in line (its queue and claim id), or idle in
  // their queue's pool (`claimId` null) for the next claim of that queue to take.
  readonly registrations: Map<string, Registration>
  readonly pools: Map<string, Registration[]>
  // Tokens taken back (`takeBack`) whose `handed` message may still come, with when: the message
  // is dropped, since the job it names goes back to the store. Kept a lease at most.
  readonly takenBack: Map<string, number>
  /** Reports a failure that is not a catalogue error (a defect); a catalogue error only ends the step. */
  readonly swallow: (error: unknown) => void
}

// `HandOvers.register`: the pool's freshest registration that outlasts this wait, else a new batch
// for a lease — as many tokens as claims of the queue wait here with this one, the rest pooled.
function register(books: HandOverBooks, queue: string, place: PlaceInLine, untilMs: number): WaiterRegistration {
  const engine = books.engineOf()
  const nowMs = engine.now()
  const idle = books.pools.get(queue) ?? []
  let registration: Registration | undefined
  while (registration === undefined && idle.length > 0) {
    const pooled = idle.pop() as Registration
    // One the store never took (no fence to give then) is dropped: a new one may get it now.
    if (pooled.untilMs >= untilMs && !pooled.refused) registration = pooled
    else void takeBack(books, engine, [pooled])
  }
  if (idle.length === 0) books.pools.delete(queue)
  if (registration === undefined) {
    const [first, ...rest] = registeredBatch(books, engine, queue, Math.min(waiterTokensMax, attached(books, queue) + 1), Math.max(untilMs, nowMs + waiterLeaseMs))
    for (const spare of rest) pool(books, spare)
    registration = first as Registration
  }
  registration.claimId = place.claimId
  const held = registration
  return {
    withdraw() {
      // Handed over meanwhile (its `handed` message came): nothing is left to take back.
      if (books.registrations.get(held.claimToken) !== held) return
      // The queue's partitions left this engine: its fence is stale, so it goes.
      if (!books.engineOf().dispatch.of(queue).isDeliveredHere()) {
        void takeBack(books, books.engineOf(), [held])
        return
      }
      // Back to the pool, still registered: the loop's next claim takes it with no statement.
      pool(books, held)
    },
  }
}

// Registers `count` new tokens for `queue` until `untilMs` under the queue's fence, in one statement.
function registeredBatch(books: HandOverBooks, engine: HandOverEngine, queue: string, count: number, untilMs: number): Registration[] {
  const claimTokens = Array.from({ length: count }, () => randomId(engine.random))
  const added = books.options
    .fenced(queue, (fence) => engine.jobStore.addWaiters({ queue, claimTokens, hostId: engine.hostId, untilMs, nowMs: engine.now(), fence }).then(() => true), async () => false)
    .catch((error: unknown) => {
      books.swallow(error)
      return false
    })
  const batch = claimTokens.map((claimToken): Registration => ({ queue, claimToken, untilMs, added, claimId: null, refused: false }))
  void added.then((ok) => {
    for (const registration of batch) registration.refused = !ok
  })
  for (const registration of batch) books.registrations.set(registration.claimToken, registration)
  return batch
}

// Deletes registrations here and, those the store took, there in one statement (a failure only
// leaves them to expire). A token the store no longer has was taken by an enqueue whose message
// has not come: its job goes back to the store, and the message, should it come, is dropped.
function takeBack(books: HandOverBooks, engine: HandOverEngine, taken: ReadonlyArray<Registration>): Promise<unknown> {
  const { registrations, takenBack } = books
  const nowMs = engine.now()
  for (const [token, atMs] of takenBack) if (atMs + waiterLeaseMs <= nowMs) takenBack.delete(token)
  for (const registration of taken) {
    registrations.delete(registration.claimToken)
    takenBack.set(registration.claimToken, nowMs)
  }
  return Promise.all(taken.map(async (registration) => ((await registration.added) ? [registration] : [])))
    .then(async (added) => {
      const asked = added.flat()
      const removed = new Set(
        asked.length === 0
          ? []
          : await engine.jobStore.removeWaiters({ claimTokens: asked.map((registration) => registration.claimToken) }).catch((error: unknown) => {
              // Nothing is known of them: a message that comes is handed on here, as before the take-back.
              for (const registration of taken) takenBack.delete(registration.claimToken)
              throw error
            }),
      )
      for (const registration of taken) if (removed.has(registration.claimToken) || !asked.includes(registration)) takenBack.delete(registration.claimToken)
      await giveBackHandedOver(engine, asked.filter((registration) => !removed.has(registration.claimToken)))
    })
    .catch(books.swallow)
}

// Gives back, queue by queue, the jobs enqueues claimed with `lost`'s tokens.
async function giveBackHandedOver(engine: HandOverEngine, lost: ReadonlyArray<Registration>): Promise<void> {
  for (const queue of new Set(lost.map((registration) => registration.queue))) {
    const claimTokens = lost.filter((registration) => registration.queue === queue).map((registration) => registration.claimToken)
    const released = await engine.jobStore.releaseHandedOver({ queue, claimTokens, nowMs: engine.now() })
    if (released.length > 0) engine.announceDue(queue, engine.now(), true)
  }
}

// Puts `registration` idle in its queue's pool.
function pool(books: HandOverBooks, registration: Registration): void {
  registration.claimId = null
  const kept = books.pools.get(registration.queue) ?? []
  kept.push(registration)
  books.pools.set(registration.queue, kept)
}

// How many registrations of `queue` serve a claim now.
function attached(books: HandOverBooks, queue: string): number {
  let count = 0
  for (const registration of books.registrations.values()) if (registration.queue === queue && registration.claimId !== null) count++
  return count
}

// `HandOvers.onMessage`: a `handed` message goes to the claim its token serves if that still
// waits, else to the queue's claim waiting longest (or is kept); one whose registration was taken
// back first is dropped, its job given back to the store instead.
function onHandedMessage(books: HandOverBooks, message: JsonValue): boolean {
  const job = handedJobOf(message)
  if (job === null) return false
  if (books.takenBack.delete(job.claimToken as string)) return true
  const engine = books.engineOf()
  const registration = books.registrations.get(job.claimToken as string)
  if (registration !== undefined) {
    // Taken by the enqueue: out of the books, and out of its queue's pool if it was idle there.
    books.registrations.delete(registration.claimToken)
    const idle = books.pools.get(registration.queue)
    if (idle !== undefined && idle.includes(registration)) books.pools.set(registration.queue, idle.filter((pooled) => pooled !== registration))
  }
  engine.driver.notifyDue(job.deadlineMs as number, job.queue)
  const claimId = registration?.queue === job.queue ? registration.claimId : null
  engine.dispatch.of(job.queue).handOver(job, claimId)
  return true
}

// A token registered as a waiter: its queue, until when, whether the store took it, and the claim it serves now (null: idle in its pool).
interface Registration {
  readonly queue: string
  readonly claimToken: string
  readonly untilMs: number
  readonly added: Promise<boolean>
  claimId: number | null
  /** The store did not take it (this engine had no fence of the queue to give, or the write failed). */
  refused: boolean
}
