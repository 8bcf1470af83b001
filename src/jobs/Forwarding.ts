/**
 * Forwarding — polls and hand-overs between engines sharing one database, the way upstream
 * Matching forwards a poll to the partition's owner: the poller's engine sends a poll message to
 * the owner; the owner polls its own Matching partition on the poller's behalf, so History (the
 * claim) runs on the owner; the owner hands the claimed job to the poller's engine over the bus.
 *
 * Messages (JSON over the Bus):
 * - `poll` { pollId, from, queue, waitMs, lazy } — poller → owner;
 * - `claimed` { pollId, jobId, claimToken, job? } — owner → poller; `job` is the claimed record
 *   when it fits in one message, otherwise the poller reads it back (`getJob`) and checks the token;
 * - `empty` { pollId, refused } — owner → poller: nothing came within the wait, or the owner
 *   could not serve the poll (not the owner any more, closing, too many polls);
 * - `cancel` { pollId } — poller → owner: nobody waits for this poll any more (a worker stopped).
 *
 * A message lost in transit costs time, never a job: a lost poll or answer ends at the poller's
 * timeout; a lost hand-over leaves the job claimed by nobody, and its claim lapses and is
 * delivered again (one claim lapse). A hand-over that arrives after its poll gave up is given
 * back to the store at once (due again, its attempt uncounted).
 *
 * Invariants: at most `forwardedPollsMax` polls served for others at once; every waiting
 * forwarded poll ends by its timer, its answer, `wake`, or `close`; the poller's timer runs on
 * the injected clock.
 *
 * Does not: choose the owner (the claimer does, from QueueRouting), or retry.
 */
import { isMatchboxError } from '../domain/errors.ts'
import type { JsonValue } from '../domain/Json.ts'
import type { CancelTimer, Clock } from '../kernel/Clock.ts'
import { randomId } from '../kernel/Ids.ts'
import { forwardedPollGraceMs, forwardedPollsMax } from '../kernel/Limits.ts'
import type { Random } from '../kernel/Random.ts'
import { type Bus, busMessageBytesMax } from '../persistence/bus/Bus.ts'
import type { ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
import type { QueueRouting } from './QueueRouting.ts'

/** How a forwarded poll ended. */
export type ForwardedPollResult = { readonly kind: 'claimed'; readonly job: JobRecord } | { readonly kind: 'empty' } | { readonly kind: 'refused' }

/** The forwarding of one engine. */
export interface Forwarding {
  /** Asks `ownerHostId` to claim a job of `queue` for this engine, waiting up to `waitMs` there. */
  poll(queue: string, ownerHostId: string, waitMs: number, lazy: boolean): Promise<ForwardedPollResult>
  /** Ends this engine's waiting forwarded polls of `queue` at once (a worker stopping). */
  wake(queue: string): void
  /** Handles one message from the bus (both sides). */
  onMessage(message: JsonValue): void
  /** Ends every waiting poll and refuses new ones. */
  close(): void
}

/** What forwarding needs. */
export interface ForwardingOptions {
  readonly hostId: string
  readonly bus: Bus
  readonly clock: Clock
  /** Draws poll ids. */
  readonly random: Random
  readonly jobStore: JobStore
  readonly routing: QueueRouting
  /**
   * Claims through this engine's own partitions on behalf of `identity`, waiting up to `waitMs`
   * (Claimer's `pollDeliverable`, so forwarded and local polls share one count of polls in flight).
   */
  readonly serveLocally: (queue: string, waitMs: number, lazy: boolean, identity: string, cancelled: AbortSignal) => Promise<JobRecord | null>
  /** Wakes this engine's waiting claims of `queue`, so a cancelled forwarded poll notices. */
  readonly wakeLocal: (queue: string) => void
  /**
   * Gives back the claim of a job the owner claimed for a poll of this engine that had already
   * given up: nobody here waits for it, and it must not wait out its visibility timeout.
   */
  readonly release: (claim: ClaimRef, queue: string | undefined) => void
  /** Failures that are not catalogue errors (defects). */
  readonly onDefect: (defect: unknown) => void
}

interface Waiting {
  readonly queue: string
  readonly settle: (result: ForwardedPollResult | { readonly kind: 'handed'; readonly message: ClaimedMessage }) => void
}

interface ClaimedMessage {
  readonly kind: 'claimed'
  readonly pollId: string
  readonly jobId: string
  readonly claimToken: string
  readonly job?: JobRecord
}

const isRecord = (value: JsonValue): value is { readonly [key: string]: JsonValue } => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Makes the forwarding of one engine. */
export function makeForwarding(options: ForwardingOptions): Forwarding {
  const { bus, clock, hostId } = options
  const waiting = new Map<string, Waiting>()
  // Polls served for other engines, by poll id: a cancel marks one, and its wait ends.
  const served = new Map<string, { readonly queue: string; readonly cancelled: AbortController }>()
  // This engine's own forwarded polls, by poll id: where each went, to cancel it.
  const sentTo = new Map<string, string>()
  let closed = false

  const send = (to: string, message: JsonValue): void => {
    bus.send(to, message).catch((error: unknown) => {
      if (!isMatchboxError(error)) options.onDefect(error)
    })
  }

  const serve = async (pollId: string, from: string, queue: string, waitMs: number, lazy: boolean): Promise<void> => {
    if (closed || served.size >= forwardedPollsMax) return send(from, { kind: 'empty', pollId, refused: true })
    const entry = { queue, cancelled: new AbortController() }
    served.set(pollId, entry)
    try {
      await options.routing.load(queue)
      if (!options.routing.owns(queue)) return send(from, { kind: 'empty', pollId, refused: true })
      const job = await options.serveLocally(queue, waitMs, lazy, from, entry.cancelled.signal)
      if (job === null) return send(from, { kind: 'empty', pollId, refused: false })
      const full = { kind: 'claimed', pollId, jobId: job.id, claimToken: job.claimToken as string, job: job as unknown as JsonValue }
      // A job too large for one message goes by reference; the poller reads it back.
      const fits = Buffer.byteLength(JSON.stringify({ to: from, message: full }), 'utf8') <= busMessageBytesMax
      send(from, fits ? full : { kind: 'claimed', pollId, jobId: job.id, claimToken: job.claimToken as string })
    } catch (error) {
      if (!isMatchboxError(error)) options.onDefect(error)
      send(from, { kind: 'empty', pollId, refused: true })
    } finally {
      served.delete(pollId)
    }
  }

  const resolveHandOver = async (queue: string, message: ClaimedMessage): Promise<JobRecord | null> => {
    const job = message.job ?? (await options.jobStore.getJob({ queue, id: message.jobId }))
    return job !== null && job.queue === queue && job.id === message.jobId && job.claimToken === message.claimToken && job.state === 'processing' ? job : null
  }

  return {
    async poll(queue, ownerHostId, waitMs, lazy) {
      if (closed) return { kind: 'refused' }
      const pollId = randomId(options.random)
      let cancelTimer: CancelTimer = () => {}
      const answered = new Promise<ForwardedPollResult | { readonly kind: 'handed'; readonly message: ClaimedMessage }>((resolve) => {
        waiting.set(pollId, {
          queue,
          settle: (result) => {
            cancelTimer()
            resolve(result)
          },
        })
      })
      cancelTimer = clock.setTimer(waitMs + forwardedPollGraceMs, () => settleWaiting(pollId, { kind: 'empty' }))
      sentTo.set(pollId, ownerHostId)
      try {
        await bus.send(ownerHostId, { kind: 'poll', pollId, from: hostId, queue, waitMs, lazy })
      } catch (error) {
        waiting.delete(pollId)
        sentTo.delete(pollId)
        cancelTimer()
        throw error
      }
      const result = await answered
      if (result.kind !== 'handed') return result
      const job = await resolveHandOver(queue, result.message)
      return job === null ? { kind: 'empty' } : { kind: 'claimed', job }
    },

    wake(queue) {
      for (const [pollId, entry] of waiting) if (entry.queue === queue) cancel(pollId)
    },

    onMessage(message) {
      if (!isRecord(message) || typeof message.pollId !== 'string') return
      const pollId = message.pollId
      switch (message.kind) {
        case 'poll':
          if (typeof message.from === 'string' && typeof message.queue === 'string' && typeof message.waitMs === 'number') {
            void serve(pollId, message.from, message.queue, Math.max(0, message.waitMs), message.lazy === true)
          }
          return
        case 'claimed': {
          if (typeof message.jobId !== 'string' || typeof message.claimToken !== 'string') return
          const claimed: ClaimedMessage = {
            kind: 'claimed',
            pollId,
            jobId: message.jobId,
            claimToken: message.claimToken,
            ...(isRecord(message.job ?? null) ? { job: message.job as unknown as JobRecord } : {}),
          }
          const entry = waiting.get(pollId)
          if (entry !== undefined) {
            waiting.delete(pollId)
            return entry.settle({ kind: 'handed', message: claimed })
          }
          // Its poll gave up: give the claim back, so the job is due again at once.
          options.release({ id: claimed.jobId, claimToken: claimed.claimToken }, claimed.job?.queue)
          return
        }
        case 'empty':
          return settleWaiting(pollId, message.refused === true ? { kind: 'refused' } : { kind: 'empty' })
        case 'cancel': {
          const entry = served.get(pollId)
          if (entry === undefined) return
          entry.cancelled.abort()
          options.wakeLocal(entry.queue)
          return
        }
      }
    },

    close() {
      closed = true
      for (const pollId of Array.from(waiting.keys())) cancel(pollId) // a snapshot: cancel deletes
      for (const entry of served.values()) {
        entry.cancelled.abort()
        options.wakeLocal(entry.queue)
      }
    },
  }

  function settleWaiting(pollId: string, result: ForwardedPollResult): void {
    const entry = waiting.get(pollId)
    sentTo.delete(pollId)
    if (entry === undefined) return
    waiting.delete(pollId)
    entry.settle(result)
  }

  // Ends our own waiting poll now and asks its owner to stop serving it, so the owner does not
  // claim a job for a poll nobody waits for (that job would wait out a claim lapse).
  function cancel(pollId: string): void {
    const owner = sentTo.get(pollId)
    settleWaiting(pollId, { kind: 'empty' })
    if (owner !== undefined) send(owner, { kind: 'cancel', pollId })
  }
}
