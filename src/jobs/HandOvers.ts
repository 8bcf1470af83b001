/**
 * HandOvers — this engine's side of the hand-over at enqueue across engines
 * (persistence/jobs/HandOver.ts), both ways:
 * - **waiting**: a claim of this engine parked in its queue's line (Claimer.ts's `waitInLine`)
 *   registers as a waiter in the store under the fence of the queue's partition this engine owns,
 *   and takes the registration back when it stops waiting; a `handed` message for its token hands
 *   the job to it if it still waits, else to the claim of the queue waiting longest (or keeps it
 *   for the next, as any hand-over: Dispatch.ts);
 * - **enqueueing**: an enqueue of this engine for a queue it does not deliver alone (a producer's)
 *   asks the store for a waiter; a job the store handed over without raising the message itself
 *   (the memory store) is announced here, over the bus.
 *
 * A registration costs two statements per park (register, take back), none while the store
 * serves claims at once (a drain never parks). A lost `handed` message, or one that arrives
 * after every claim of the queue stopped waiting, costs the job one claim lapse — it is claimed
 * under a token nobody holds — never the job.
 *
 * Invariants: a token is registered at most once and forgotten when its claim stops waiting;
 * registrations in flight are bounded by the claims in line; no timer.
 *
 * Does not: choose the job a waiter gets (the producer's statement does), or retry.
 */
import { isMatchboxError } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import { randomId } from '../kernel/Ids.ts'
import type { Random } from '../kernel/Random.ts'
import type { Bus } from '../persistence/bus/Bus.ts'
import { handedJobOf, handOverMessage, isHandOverCandidate } from '../persistence/jobs/HandOver.ts'
import type { ClaimFence, EnqueueAnswer, JobStore, NewJob } from '../persistence/jobs/JobStore.ts'
import type { Dispatches, PlaceInLine } from './Dispatch.ts'
import type { DueDriver } from './DueDriver.ts'
import type { QueueRouting } from './QueueRouting.ts'

/** A claim's registration as a waiter: `withdraw` once it stops waiting. */
export interface WaiterRegistration {
  withdraw(): void
}

/** The hand-overs at enqueue of one engine in a group. */
export interface HandOvers {
  /** Registers the claim at `place` in `queue`'s line as a waiter until `untilMs`. */
  register(queue: string, place: PlaceInLine, untilMs: number): WaiterRegistration
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
  // This engine's claims registered as waiters, by token.
  const waiting = new Map<string, { readonly queue: string; readonly claimId: number }>()
  const swallow = (error: unknown): void => {
    if (!isMatchboxError(error)) options.onDefect(error)
  }
  return {
    register(queue, place, untilMs) {
      const runtime = engineOf()
      const claimToken = randomId(runtime.random)
      waiting.set(claimToken, { queue, claimId: place.claimId })
      const added = options.fenced(
        queue,
        (fence) => runtime.jobStore.addWaiter({ queue, claimToken, hostId: runtime.hostId, untilMs, nowMs: runtime.now(), fence }).then(() => true),
        async () => false,
      ).catch((error: unknown) => {
        swallow(error)
        return false
      })
      return {
        withdraw() {
          // Still known here: no `handed` message came for it, so take it back from the store
          // (a false answer means an enqueue took it meanwhile: its message is on its way).
          if (!waiting.delete(claimToken)) return
          void added.then((registered) => (registered ? runtime.jobStore.removeWaiter({ claimToken }) : false)).catch(swallow)
        },
      }
    },

    async enqueue(job, nowMs) {
      const runtime = engineOf()
      if (runtime.routing.ownsEvery(job.queue) || !isHandOverCandidate(job, nowMs, Buffer.byteLength(JSON.stringify(job.payload), 'utf8'))) return null
      const answer = await runtime.jobStore.enqueue({ job, nowMs, toWaiter: true })
      if (answer.handedTo !== undefined && !options.storeSends) {
        options.bus.send(answer.handedTo.hostId, handOverMessage(job, nowMs, answer.claimToken as string)).catch(swallow)
      }
      return answer
    },

    onMessage(message) {
      const job = handedJobOf(message)
      if (job === null) return false
      const runtime = engineOf()
      const entry = waiting.get(job.claimToken as string)
      waiting.delete(job.claimToken as string)
      runtime.driver.notifyDue(job.deadlineMs as number, job.queue)
      runtime.dispatch.of(job.queue).handOver(job, entry?.queue === job.queue ? entry.claimId : null)
      return true
    },
  }
}
