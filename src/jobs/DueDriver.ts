/**
 * DueDriver — the History role's delivery timers (DESIGN.md §7), driven from due times stored
 * in the database: a job becomes due at enqueue (runAt), after a retry backoff and when a
 * claim's deadline lapses.
 *
 * A pass, at the clock's current time: claims due jobs straight for the claims of this engine
 * waiting in line (`claimForWaiting`); reserves at most as many due rows of a queue as polls
 * wait for them in Matching (`deliveryDemand`) and leaves the rest in the store, where the next
 * claim takes them; on a scan, the store dead-letters exhausted lapsed claims.
 *
 * Reserving pushes each row's due time `jobDeliveryRetryMs` forward BEFORE its task is added;
 * the pass adds one Matching task per reserved row in claim order (priority DESC, due time ASC,
 * ready order), and confirms the rows whose task Matching accepted (due := null). A failed add
 * gives its reservation back (due again after `jobDeliveryRefusedRetryMs`; when the store fails
 * that too, at the start of the next pass); a crash between
 * reserve and confirm leaves the reservation, so the row is offered again after
 * `jobDeliveryRetryMs`: at worst a duplicate task, which History answers obsolete or
 * already-started; never a stranded job.
 *
 * With routing (several engines on one database), a pass delivers only the queues of which this
 * engine owns a partition: those named by due signals since the last pass, plus — on a timer,
 * a lazy claim or a change of ownership — the queues the store lists with due rows.
 *
 * Invariants: passes run one at a time, in request order; a requested pass that has not started
 * yet is shared by every caller that asks meanwhile (it will read the clock after all of them);
 * one clock timer is armed, at the earliest due time in the store (read after each pass, and
 * lowered by `notifyDue`) or the safety scan (`jobDueScanIntervalMs`), whichever is sooner —
 * the scan finds rows other connections wrote since. Waiters for a queue are woken first come first served: one per task a
 * pass hands that queue, or as many as asked (`wake`).
 *
 * While the store is failing, passes back off (OutageBackoff.ts: 50 ms doubling to 1 s, with
 * jitter): the retry scan waits out each step and kicks in between only mark what to scan; the
 * first pass that succeeds ends the outage. Explicit `run()` calls (a lazy claim) still run.
 *
 * The pass itself — what it reserves, adds, confirms and gives back — is DuePass.ts's; this file
 * owns when passes run: the timer, the one-pass-at-a-time order, the requests and the waiters.
 *
 * Does not: decide anything about a job (the store's statements do), or run sweeps.
 */
import type { CancelTimer } from '../kernel/Clock.ts'
import { registerSizes } from '../kernel/Sizes.ts'
import { jobDueScanIntervalMs } from '../kernel/Limits.ts'
import { makeOutageBackoff } from './OutageBackoff.ts'
import { type DueDriverOptions, type DuePassState, nowOf, runPass } from './DuePass.ts'
import { makeQueueWaiters, type QueueWaiters, type WakeReason } from './QueueWaiters.ts'

// Why a wait for delivery ended (QueueWaiters.ts).
export type { WakeReason } from './QueueWaiters.ts'
// What a driver needs (DuePass.ts, whose passes read it).
export type { DueDriverOptions } from './DuePass.ts'

/** The delivery driver of one engine. */
export interface DueDriver {
  /** Runs a pass at the clock's time (after any running one); resolves when it is done. */
  run(): Promise<void>
  /**
   * Waits for a requested pass, or runs one if the armed timer is already due (a clock that
   * jumped); otherwise returns at once. Workers use it: the timers and the scan deliver for them.
   */
  runIfDue(): Promise<void>
  /**
   * Requests a pass soon without waiting for it: a full scan, or for `queue` (a due signal that
   * does not say when its rows are due: that pass also reads the queue's next due time).
   */
  kick(queue?: string): void
  /** A row of `queue` became due at `dueMs`: make sure a pass runs then. */
  notifyDue(dueMs: number, queue?: string): void
  /**
   * Waits, first come first woken, until a pass hands `queue` tasks ('delivered'), `wake` is
   * called ('woken'), `untilMs` arrives ('timeout'), or the driver closes ('woken').
   */
  waitForDelivery(queue: string, untilMs: number): Promise<WakeReason>
  /** Wakes the first `count` waiters of `queue` (default: all). */
  wake(queue: string, count?: number): void
  /**
   * Waits until `untilMs`, or until membership changes (`ownersChanged`), or the driver closes
   * ('woken'): how a claim that found nobody serving its queue, or whose forwarded poll was
   * refused, waits before it looks at the owners again.
   */
  waitForOwner(queue: string, untilMs: number): Promise<WakeReason>
  /** Membership changed: wakes every `waitForOwner`, so those claims look at the new view now, not at their timers. */
  ownersChanged(): void
  /** Resolves once no pass is running or requested. */
  idle(): Promise<void>
  /**
   * Resolves once the passes running or requested now have run (not those requested later, so a
   * stream of due signals cannot hold it off).
   */
  settled(): Promise<void>
  /**
   * True when no pass is running or requested and the timer is not overdue: every row due by
   * now that this engine delivers has been handed to Matching (as far as this engine knows).
   */
  isQuiet(): boolean
  /** Cancels the timer, wakes every waiter, and waits for the running pass. */
  close(): Promise<void>
}

// A driver's state: what its passes read and change (DuePass.ts), and the order they run in.
interface DueDriverState extends DuePassState {
  /** Claims waiting for their queue to have an owner (or to retry a refused poll), which membership changes wake. */
  readonly owners: QueueWaiters
  /** The last pass requested; the next runs after it. */
  tail: Promise<void>
  /** A requested pass that has not started yet, shared by every caller meanwhile. */
  requested: Promise<void> | null
  passRunning: boolean
  timer: { atMs: number; cancel: CancelTimer } | null
}

/** Starts a driver (it arms its first scan at once). */
export function makeDueDriver(options: DueDriverOptions): DueDriver {
  const { clock } = options
  const state: DueDriverState = {
    options,
    deliveries: makeQueueWaiters(clock, () => state.closed),
    owners: makeQueueWaiters(clock, () => state.closed),
    tail: Promise.resolve(),
    requested: null,
    passRunning: false,
    timer: null,
    closed: false,
    signalled: new Set<string>(),
    scanNeeded: true,
    untimedSignal: false,
    outage: makeOutageBackoff(options.random),
    unreleased: [],
    addsHeld: new Map<string, number>(),
    arm: (atMs) => arm(state, atMs),
    request: (queue) => request(state, queue),
    report: (defect) => report(options, defect),
  }
  arm(state, nowOf(clock) + jobDueScanIntervalMs)

  const { deliveries, owners } = state
  // Its sizes (kernel/Sizes.ts): the queues with claims waiting for a delivery, the queues
  // signalled for the next pass, and the reservations still to give back.
  const driver: DueDriver = {
    run() {
      state.scanNeeded = true
      return run(state)
    },
    runIfDue() {
      if (state.requested !== null) return state.requested
      if (state.timer === null || state.timer.atMs > clock.now()) return Promise.resolve()
      state.scanNeeded = true
      return run(state)
    },
    kick(queue) {
      if (queue !== undefined) state.untimedSignal = true
      request(state, queue)
    },
    notifyDue(dueMs, queue) {
      if (dueMs <= clock.now()) request(state, queue)
      else arm(state, dueMs)
    },
    waitForDelivery: (queue, untilMs) => deliveries.wait(queue, untilMs),
    waitForOwner: (queue, untilMs) => owners.wait(queue, untilMs),
    wake: (queue, count = Number.POSITIVE_INFINITY) => deliveries.wake(queue, 'woken', count),
    ownersChanged: () => owners.wakeAll('woken'),
    isQuiet: () => state.requested === null && !state.passRunning && (state.timer === null || state.timer.atMs > clock.now()),
    settled: () => state.tail,
    async idle() {
      for (let seen: Promise<void> | null = null; seen !== state.tail; ) {
        seen = state.tail
        await state.tail
      }
    },
    async close() {
      state.closed = true
      state.timer?.cancel()
      state.timer = null
      deliveries.wakeAll('woken')
      owners.wakeAll('woken')
      await state.tail
    },
  }
  return registerSizes(driver, () => ({ dueWaiterQueues: deliveries.size() + owners.size(), dueSignalled: state.signalled.size, dueUnreleased: state.unreleased.length, dueAddsHeld: state.addsHeld.size }))
}

// Arms the timer at `atMs` unless it is armed sooner; when it fires, the pass it requests scans.
function arm(state: DueDriverState, atMs: number): void {
  const { clock } = state.options
  if (state.closed || (state.timer !== null && state.timer.atMs <= atMs)) return
  state.timer?.cancel()
  const armed = { atMs, cancel: clock.setTimer(atMs - clock.now(), () => {
    if (state.timer === armed) state.timer = null
    state.scanNeeded = true
    request(state)
  }) }
  state.timer = armed
}

// Runs a pass after the one requested last, or answers the one requested and not started yet.
function run(state: DueDriverState): Promise<void> {
  if (state.requested !== null) return state.requested
  const started = state.tail.then(() => {
    state.requested = null
    return pass(state)
  })
  state.requested = started
  state.tail = started
  return started
}

async function pass(state: DueDriverState): Promise<void> {
  if (state.closed) return
  state.passRunning = true
  try {
    await runPass(state)
  } finally {
    state.passRunning = false
  }
}

// Requests a pass soon (a full scan, or for `queue`) without waiting for it.
function request(state: DueDriverState, queue?: string): void {
  if (state.closed) return
  if (queue === undefined) state.scanNeeded = true
  else state.signalled.add(queue)
  // While the store is failing, signals wait for the back-off step's scan instead of each
  // running a pass against it.
  if (state.outage.retryAtMs() > state.options.clock.now()) return arm(state, state.outage.retryAtMs())
  void run(state)
}

// Hands a defect to `onDefect`, or rethrows it asynchronously.
function report(options: DueDriverOptions, defect: unknown): void {
  if (options.onDefect !== undefined) return options.onDefect(defect)
  queueMicrotask(() => {
    throw defect
  })
}
