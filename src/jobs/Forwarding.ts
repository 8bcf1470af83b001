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
 * back to the store at once (due again, its attempt uncounted); so is one whose poll's `cancel`
 * reaches the owner while the owner's claim for it is at the store, or after the owner answered
 * it — the poller, which cancelled, will not run it, and if it closed it never hears the answer.
 *
 * Invariants: at most `forwardedPollsMax` polls served for others at once, and the answers with
 * a job of the last `forwardedPollGraceMs` remembered; a poll id is sent a cancel only while its
 * poll still waits here, so a poller never runs a job for a poll it cancelled; every waiting
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

// One engine's forwarding state, both sides: its own polls waiting for an answer, and the polls
// it serves for other engines.
interface ForwardingState {
  readonly options: ForwardingOptions
  readonly waiting: Map<string, Waiting>
  // Polls served for other engines, by poll id: a cancel from the poller, or this engine's close,
  // ends its wait; only the poller's cancel means nobody will take its job.
  readonly served: Map<string, ServedPoll>
  // This engine's own forwarded polls, by poll id: where each went, to cancel it.
  readonly sentTo: Map<string, string>
  // Polls this engine answered with a job in the last `forwardedPollGraceMs`, oldest first: a
  // cancel that crossed the answer on the bus gives that job back (the poller will not take it).
  readonly handedFor: Map<string, { readonly claim: ClaimRef; readonly queue: string; readonly atMs: number }>
  closed: boolean
}

interface ServedPoll {
  readonly queue: string
  readonly cancelled: AbortController
  pollerCancelled: boolean
}

/** Makes the forwarding of one engine. */
export function makeForwarding(options: ForwardingOptions): Forwarding {
  const state: ForwardingState = { options, waiting: new Map(), served: new Map(), sentTo: new Map(), handedFor: new Map(), closed: false }
  return {
    poll: (queue, ownerHostId, waitMs, lazy) => poll(state, queue, ownerHostId, waitMs, lazy),
    wake(queue) {
      for (const [pollId, entry] of state.waiting) if (entry.queue === queue) cancel(state, pollId)
    },
    onMessage: (message) => onMessage(state, message),
    close() {
      state.closed = true
      for (const pollId of Array.from(state.waiting.keys())) cancel(state, pollId) // a snapshot: cancel deletes
      for (const entry of state.served.values()) {
        entry.cancelled.abort()
        options.wakeLocal(entry.queue)
      }
    },
  }
}

function send(state: ForwardingState, to: string, message: JsonValue): void {
  state.options.bus.send(to, message).catch((error: unknown) => {
    if (!isMatchboxError(error)) state.options.onDefect(error)
  })
}

// The poller's side of `poll`: sends the poll to its owner and waits for the answer or the timer.
async function poll(state: ForwardingState, queue: string, ownerHostId: string, waitMs: number, lazy: boolean): Promise<ForwardedPollResult> {
  const { options, waiting, sentTo } = state
  if (state.closed) return { kind: 'refused' }
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
  cancelTimer = options.clock.setTimer(waitMs + forwardedPollGraceMs, () => settleWaiting(state, pollId, { kind: 'empty' }))
  sentTo.set(pollId, ownerHostId)
  try {
    await options.bus.send(ownerHostId, { kind: 'poll', pollId, from: options.hostId, queue, waitMs, lazy })
  } catch (error) {
    waiting.delete(pollId)
    sentTo.delete(pollId)
    cancelTimer()
    throw error
  }
  const result = await answered
  if (result.kind !== 'handed') return result
  const job = await resolveHandOver(options.jobStore, queue, result.message)
  return job === null ? { kind: 'empty' } : { kind: 'claimed', job }
}

// The job a `claimed` answer hands over, if it is still claimed with its token; read back when the
// message carried it by reference.
async function resolveHandOver(jobStore: JobStore, queue: string, message: ClaimedMessage): Promise<JobRecord | null> {
  const job = message.job ?? (await jobStore.getJob({ queue, id: message.jobId }))
  return job !== null && job.queue === queue && job.id === message.jobId && job.claimToken === message.claimToken && job.state === 'processing' ? job : null
}

// Handles one message from the bus, on either side.
function onMessage(state: ForwardingState, message: JsonValue): void {
  if (!isRecord(message) || typeof message.pollId !== 'string') return
  const pollId = message.pollId
  switch (message.kind) {
    case 'poll':
      if (typeof message.from === 'string' && typeof message.queue === 'string' && typeof message.waitMs === 'number') {
        void serve(state, pollId, message.from, message.queue, Math.max(0, message.waitMs), message.lazy === true)
      }
      return
    case 'claimed':
      return onClaimed(state, pollId, message)
    case 'empty':
      return settleWaiting(state, pollId, message.refused === true ? { kind: 'refused' } : { kind: 'empty' })
    case 'cancel': {
      const entry = state.served.get(pollId)
      if (entry !== undefined) {
        entry.pollerCancelled = true
        entry.cancelled.abort()
        state.options.wakeLocal(entry.queue)
        return
      }
      // Answered already: the poller cancelled before the job reached it, so it will not run it
      // (a poller that still listens gives it back too; the first give-back wins) — and one that
      // closed never hears it. Given back here, the job is due again at once.
      const handed = state.handedFor.get(pollId)
      if (handed === undefined) return
      state.handedFor.delete(pollId)
      state.options.release(handed.claim, handed.queue)
      return
    }
  }
}

// A `claimed` answer to this engine's poll `pollId`: hands it to the waiting poll, or gives the
// claim back when the poll gave up.
function onClaimed(state: ForwardingState, pollId: string, message: { readonly [key: string]: JsonValue }): void {
  if (typeof message.jobId !== 'string' || typeof message.claimToken !== 'string') return
  const claimed: ClaimedMessage = {
    kind: 'claimed',
    pollId,
    jobId: message.jobId,
    claimToken: message.claimToken,
    ...(isRecord(message.job ?? null) ? { job: message.job as unknown as JobRecord } : {}),
  }
  const entry = state.waiting.get(pollId)
  state.sentTo.delete(pollId)
  if (entry !== undefined) {
    state.waiting.delete(pollId)
    return entry.settle({ kind: 'handed', message: claimed })
  }
  // Its poll gave up: give the claim back, so the job is due again at once.
  state.options.release({ id: claimed.jobId, claimToken: claimed.claimToken }, claimed.job?.queue)
}

// The owner's side: claims through this engine's partitions for `from`'s poll and answers it.
async function serve(state: ForwardingState, pollId: string, from: string, queue: string, waitMs: number, lazy: boolean): Promise<void> {
  const { options, served } = state
  if (state.closed || served.size >= forwardedPollsMax) return send(state, from, { kind: 'empty', pollId, refused: true })
  const entry: ServedPoll = { queue, cancelled: new AbortController(), pollerCancelled: false }
  served.set(pollId, entry)
  try {
    await options.routing.load(queue)
    if (!options.routing.owns(queue)) return send(state, from, { kind: 'empty', pollId, refused: true })
    const job = await options.serveLocally(queue, waitMs, lazy, from, entry.cancelled.signal)
    if (job === null) return send(state, from, { kind: 'empty', pollId, refused: false })
    // The poller cancelled while the claim was at the store: it will not run the job (a poller
    // that closed never hears the answer), so the job goes back to the store, due again at once.
    // A claim that lands while this engine closes still goes to its poller, which waits for it.
    if (entry.pollerCancelled) return options.release({ id: job.id, claimToken: job.claimToken as string }, queue)
    const full = { kind: 'claimed', pollId, jobId: job.id, claimToken: job.claimToken as string, job: job as unknown as JsonValue }
    // A job too large for one message goes by reference; the poller reads it back.
    const fits = Buffer.byteLength(JSON.stringify({ to: from, message: full }), 'utf8') <= busMessageBytesMax
    send(state, from, fits ? full : { kind: 'claimed', pollId, jobId: job.id, claimToken: job.claimToken as string })
    rememberHanded(state, pollId, { id: job.id, claimToken: job.claimToken as string }, queue)
  } catch (error) {
    if (!isMatchboxError(error)) options.onDefect(error)
    send(state, from, { kind: 'empty', pollId, refused: true })
  } finally {
    served.delete(pollId)
  }
}

// Remembers that `pollId` was answered with `claim`, for a cancel that crossed the answer; forgets
// answers older than `forwardedPollGraceMs` (a cancel comes within a bus round trip of its answer).
function rememberHanded(state: ForwardingState, pollId: string, claim: ClaimRef, queue: string): void {
  const nowMs = state.options.clock.now()
  for (const [answered, handed] of state.handedFor) {
    if (handed.atMs + forwardedPollGraceMs > nowMs) break
    state.handedFor.delete(answered)
  }
  state.handedFor.set(pollId, { claim, queue, atMs: nowMs })
}

function settleWaiting(state: ForwardingState, pollId: string, result: ForwardedPollResult): void {
  const entry = state.waiting.get(pollId)
  state.sentTo.delete(pollId)
  if (entry === undefined) return
  state.waiting.delete(pollId)
  entry.settle(result)
}

// Ends our own waiting poll now and asks its owner to stop serving it, so the owner does not
// claim a job for a poll nobody waits for (that job would wait out a claim lapse).
function cancel(state: ForwardingState, pollId: string): void {
  const owner = state.sentTo.get(pollId)
  settleWaiting(state, pollId, { kind: 'empty' })
  if (owner !== undefined) send(state, owner, { kind: 'cancel', pollId })
}
