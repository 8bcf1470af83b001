/**
 * ScaleWorld — a simulated group of engines at deployment size (DESIGN.md §6, §8): N engines
 * (ScaleHost.ts, each the real job engine) on one shared memory database, queues with thousands
 * of Matching partitions between them, producers enqueueing at a steady rate on every engine and
 * `work` loops on a few engines per queue, with every store, membership and bus call through one
 * IoGate, one virtual clock and one seeded source of decisions.
 *
 * Phases: the engines start together and membership converges; steady load; one engine dies
 * (crashes, never restarted) and the world measures how long until no live engine's view shows
 * it; steady load; a replacement engine with a new id joins (it works the dead engine's queues)
 * and the world measures how long until every live engine's view shows it; steady load; then
 * faults off, every engine the faults crashed back up, enqueues stop and the world runs until
 * every committed job is delivered (or a bound passes), closes every engine and audits.
 *
 * Faults (when on) strike every phase but the last: each call may be slow, refused, commit
 * ambiguously (its host crashes before hearing; it restarts a drawn 1–3 s later, within a row's
 * lifetime) or commit with the connection lost; each bus message may be lost.
 *
 * Measured: convergence times (virtual ms) after the death and after the join; the partitions
 * whose owner differs between the converged views before and after each change, against the 1/N
 * rendezvous hashing promises (Rebalance.ts); forwarded polls and hand-overs per committed job;
 * store, membership and bus calls run.
 *
 * Judged: fencing, task-id uniqueness and ack safety over the Matching Store boundary
 * (sim/matching/Checkers.ts); only a partition's owner claims (sim/jobs/OwnershipChecker.ts);
 * the job invariants and that every committed job was delivered — acked or dead by its budget
 * — at the end (sim/jobs/JobCheckers.ts).
 *
 * Does not: measure real time or memory (the caller does, through `onProgress`), or keep a full
 * trace (a hundred engines write millions of lines): the trace holds phases, faults and views.
 *
 * Length: past 400 lines because the world is one state machine over its hosts (build, crash,
 * restart, change membership, converge, drain, close) whose steps share the host table and gate.
 */
import { ManualClock } from '../../src/kernel/Clock.ts'
import { membershipHeartbeatIntervalMs } from '../../src/kernel/Limits.ts'
import { makeMemoryBus } from '../../src/persistence/bus/MemoryBus.ts'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryMembershipStore } from '../../src/persistence/membership/MemoryMembershipStore.ts'
import { makeMemoryStore } from '../../src/persistence/queues/MemoryStore.ts'
import { Decisions } from '../core/Decisions.ts'
import { IoGate, type PendingIo } from '../core/IoGate.ts'
import { faultAfterRun, faultBeforeRun, type IoFaultChances, type IoFaultWorld } from '../core/IoFaults.ts'
import { TraceLog } from '../core/TraceLog.ts'
import { deliver, epochMs, quiesce, runParked } from '../core/Turns.ts'
import type { JobBoundaryRecord } from '../jobs/JobBoundary.ts'
import { JobCheckers, type JobsReport } from '../jobs/JobCheckers.ts'
import { OwnershipChecker, type OwnershipCounts } from '../jobs/OwnershipChecker.ts'
import { busLabelPrefix } from '../jobs/SimBus.ts'
import type { BoundaryRecord } from '../core/Boundary.ts'
import { Checkers } from '../core/Checkers.ts'
import { HistoryRecord } from '../core/HistoryRecord.ts'
import { type Rebalance, rebalance, scaleQueueNames } from './Rebalance.ts'
import { ScaleHost } from './ScaleHost.ts'
import type { ScaleOptions } from './ScaleOptions.ts'

/** The faults a scale run counts. */
export const scaleFaultNames = ['latency', 'unavailable', 'crashAfterCommit', 'maybeCommitted', 'busDrop'] as const
/** One scale fault's name. */
export type ScaleFaultName = (typeof scaleFaultNames)[number]

/**
 * The one way a job is left undelivered that this world knows of on the current engine, so a
 * run reports it apart instead of failing on it: a due-time pass hands a job's task to a Matching
 * partition (for a forwarded poll waiting there), the poll goes away, and no poll reaches that
 * partition again — its owner runs no worker of the queue, and a non-owner's claim forwards every
 * poll to the first remote owner of the queue's route (src/jobs/Claimer.ts starts its turn count
 * at 0 on each claim, and a worker's claim ends after one forwarded round), so the other owners'
 * partitions are never polled; a claim straight from the store takes such a job in its place
 * (first within its priority), so only a queue whose claims all go through Matching keeps it
 * there. Judged from the boundary:
 * the job's last committed step is the pass's `confirm`; any other job of its queue left behind
 * it is counted with it.
 */
export const strandedWithMatchingMechanism =
  "a job's task handed to a Matching partition that no poll reaches again: a worker that owns none of that partition forwards every poll to the first remote owner of its queue"

/** One membership change and how the group took it. */
export interface MembershipChange {
  readonly kind: 'start' | 'death' | 'join'
  /** The engine that died or joined (none for the start). */
  readonly hostId: string | null
  readonly atMs: number
  /** Virtual ms from the change until every live engine's view agreed with it; null: never within the phase. */
  readonly convergedMs: number | null
  /** Owners before and after, over every partition (null for the start). */
  readonly rebalance: Rebalance | null
}

/** What a finished scale run reports. */
export interface ScaleReport {
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  /** Violations of checkers known to fail on the current engine (sim/jobs/KnownEngineFailures.ts, `strandedWithMatchingMechanism`): shown, not failing. */
  readonly knownFailing: ReadonlyArray<string>
  /** Jobs stranded by `strandedWithMatchingMechanism`: with Matching, and others of their queues behind them. */
  readonly strandedWithMatching: number
  readonly strandedBehind: number
  readonly changes: ReadonlyArray<MembershipChange>
  readonly jobs: JobsReport
  /** Enqueues that committed. */
  readonly committedJobs: number
  readonly ownership: OwnershipCounts
  readonly forwardedPolls: number
  readonly handOvers: number
  readonly ioRuns: number
  readonly faults: Readonly<Record<ScaleFaultName, number>>
  /** Virtual ms of the whole run, and of the final (healed) phase within it. */
  readonly simulatedMs: number
  readonly drainMs: number
  readonly traceHash: string
  /** The trace's tail: phases, faults, views. */
  readonly trace: ReadonlyArray<string>
}

/** How a run tells its caller how far it got (the caller reads real time and memory there). */
export type ScaleProgress = (phase: string, simulatedMs: number) => void

// How often the producers enqueue: the rate's jobs of each tick go out together.
const enqueueTickMs = 100
// How long a call-crashed engine stays down: under a membership row's lifetime, so it comes back
// before the others move its partitions (the planned death is what moves them).
const restartMsMin = 1_000
const restartMsMax = 3_000
// How often (virtual ms) the caller hears how far the run got.
const progressEveryMs = 100
// Longest step of virtual time when no timer is pending.
const idleStepMs = 1_000
// How long the final phase waits for the last handlers and acks once nothing is deliverable.
const drainQuietMs = 2_000
// A job whose task has been with Matching this long in the final phase, with no step since, is
// taken as stranded by the known mechanism: forty times the jobs world's prompt-delivery bound.
const strandedAfterMs = 10_000
// The final phase gives up this long after a claim's visibility timeout with no claim committing.
const stuckAfterLapseMs = 15_000
// Store, membership and bus calls: the slow fault's longest delay.
const latencyMsMax = 500

// An engine not started yet, and when it starts.
interface PendingStart {
  readonly hostId: string
  readonly atMs: number
}

// An engine a call's fault crashed, and when it comes back.
interface PendingRestart {
  readonly host: ScaleHost
  readonly atMs: number
}

/** One scale run; `run()` once. */
export class ScaleWorld {
  readonly #options: ScaleOptions
  readonly #decide: Decisions
  readonly #clock = new ManualClock(epochMs)
  readonly #gate = new IoGate()
  readonly #store = makeMemoryStore()
  readonly #jobStore = makeMemoryJobStore({ queueRanges: this.#store })
  readonly #membershipStore = makeMemoryMembershipStore()
  readonly #bus = makeMemoryBus()
  readonly #checkers = new JobCheckers()
  readonly #handled = new HistoryRecord()
  readonly #matching = new Checkers(this.#handled)
  readonly #ownership = new OwnershipChecker()
  readonly #hosts: ScaleHost[] = []
  readonly #queueNames: ReadonlyArray<string>
  readonly #works = new Map<string, string[]>()
  readonly #faults = Object.fromEntries(scaleFaultNames.map((name) => [name, 0])) as Record<ScaleFaultName, number>
  readonly #trace: TraceLog
  // Each job's last committed step (its op), for sorting stranded jobs by mechanism.
  readonly #lastStep = new Map<string, string>()
  readonly #lastStepAtMs = new Map<string, number>()
  readonly #changes: MembershipChange[] = []
  readonly #keepTrace: boolean
  readonly #restarts: PendingRestart[] = []
  readonly #starts: PendingStart[] = []
  readonly #onProgress: ScaleProgress
  readonly #ioFaultWorld: IoFaultWorld<ScaleFaultName>
  #faultsOn: boolean
  #enqueuing = true
  #enqueueCarry = 0
  #enqueueSequence = 0
  #viewsChanged = false
  #forwardedPolls = 0
  #handOvers = 0
  #ioRuns = 0
  #committedJobs = 0
  #lastClaimMs = Number.NEGATIVE_INFINITY
  #random

  /** `keepTrace`: keep every line, and log every call run (for investigating one seed). */
  constructor(options: ScaleOptions, onProgress: ScaleProgress = () => {}, keepTrace = false) {
    this.#options = options
    this.#onProgress = onProgress
    this.#keepTrace = keepTrace
    this.#trace = new TraceLog(keepTrace)
    this.#decide = new Decisions(options.seed)
    this.#random = this.#decide.fork()
    this.#faultsOn = options.faults !== null
    this.#queueNames = scaleQueueNames(options.queues)
    this.#ioFaultWorld = {
      decide: this.#decide,
      clock: this.#clock,
      fault: (name, line) => this.#fault(name, line),
      isAlive: (hostId) => this.#hosts.some((host) => host.id === hostId && host.alive),
      crash: (hostId) => this.#crashForAWhile(hostId),
    }
    const hostIds = Array.from({ length: options.engines }, (_, i) => engineId(i + 1))
    // Each queue is worked by `workersPerQueue` distinct engines, drawn from the seed.
    for (const queue of this.#queueNames) {
      const chosen = new Set<string>()
      while (chosen.size < Math.min(options.workersPerQueue, hostIds.length)) chosen.add(this.#decide.pick(hostIds))
      for (const hostId of chosen) this.#works.set(hostId, [...(this.#works.get(hostId) ?? []), queue])
    }
    // Processes of a deployment do not start in step: each engine starts within the first
    // heartbeat interval, so their beats (and the death and join below) fall at unaligned moments.
    for (const hostId of hostIds) this.#starts.push({ hostId, atMs: this.#wakeAt(this.#decide.int(0, membershipHeartbeatIntervalMs - 1)) })
  }

  /** What the run has measured so far (for a caller that stops it before the end). */
  snapshot(): Pick<ScaleReport, 'changes' | 'committedJobs' | 'forwardedPolls' | 'handOvers' | 'ioRuns' | 'faults'> {
    return { changes: [...this.#changes], committedJobs: this.#committedJobs, forwardedPolls: this.#forwardedPolls, handOvers: this.#handOvers, ioRuns: this.#ioRuns, faults: { ...this.#faults } }
  }

  /** Runs every phase, closes every engine and audits every job. */
  async run(): Promise<ScaleReport> {
    const changes = this.#changes
    this.#armEnqueues()
    const options = this.#options
    changes.push(await this.#converge('start', null, (view) => view.length === this.#liveIds().length))
    await this.#runFor(options.steadyMs + this.#decide.int(0, membershipHeartbeatIntervalMs - 1), 'steady')
    const doomed = this.#decide.pick(this.#hosts.filter((host) => host.alive))
    const before = this.#agreedView()
    doomed.crash()
    this.#log(`DEATH ${doomed.id}: it crashes and stays down`)
    changes.push(await this.#converge('death', doomed.id, (view) => !view.includes(doomed.id), before))
    await this.#runFor(options.steadyMs + this.#decide.int(0, membershipHeartbeatIntervalMs - 1), 'steady')
    const joiner = this.#makeHost(engineId(options.engines + 1), this.#works.get(doomed.id) ?? [])
    const beforeJoin = this.#agreedView()
    this.#hosts.push(joiner)
    this.#log(`JOIN ${joiner.id}: it works ${(this.#works.get(doomed.id) ?? []).join(',') || 'nothing'}`)
    changes.push(await this.#converge('join', joiner.id, (view) => view.includes(joiner.id), beforeJoin))
    await this.#runFor(options.steadyMs, 'steady')
    const drainFromMs = this.#clock.now()
    if (!this.#failed()) await this.#finalPhase()
    const drained = !this.#failed()
    const drainMs = this.#clock.now() - drainFromMs
    await this.#closeAll()
    await this.#bus.close()
    const jobs = this.#checkers.audit(await this.#finalRows(), drained, this.#clock.now())
    for (const violation of this.#matching.violations) this.#checkers.fail('matching', violation)
    // A stranded job whose last committed step handed its task to Matching is the known mechanism (see below).
    const withMatching = jobs.stranded.filter((id) => this.#lastStep.get(id) === 'confirm')
    // ...and so is any job of the same queue: no claim serves the queue from the store meanwhile.
    const blockedQueues = new Set(withMatching.map((id) => this.#checkers.queueOf(id)))
    const blockedBehind = jobs.stranded.filter((id) => !withMatching.includes(id) && blockedQueues.has(this.#checkers.queueOf(id)))
    const known = [...withMatching, ...blockedBehind]
    // The audit names the first stranded jobs and sums up the rest in one more sentence.
    const allKnown = known.length === jobs.stranded.length
    const isKnown = (violation: string) => this.#checkers.knownFailing.has(violation) || (violation.startsWith('none stranded:') && (known.some((id) => violation.includes(id)) || (allKnown && violation.endsWith(' more jobs stranded'))))
    const violations = this.#checkers.violations.filter((violation) => !isKnown(violation))
    return {
      ok: violations.length === 0,
      violations,
      knownFailing: this.#checkers.violations.filter(isKnown),
      strandedWithMatching: withMatching.length,
      strandedBehind: blockedBehind.length,
      changes,
      jobs,
      committedJobs: this.#committedJobs,
      ownership: this.#ownership.counts(),
      forwardedPolls: this.#forwardedPolls,
      handOvers: this.#handOvers,
      ioRuns: this.#ioRuns,
      faults: this.#faults,
      simulatedMs: this.#clock.now() - epochMs,
      drainMs,
      traceHash: this.#trace.digest(),
      trace: this.#trace.lines,
    }
  }

  #makeHost(hostId: string, works: ReadonlyArray<string>): ScaleHost {
    const options = this.#options
    return new ScaleHost({
      hostId,
      store: this.#store,
      jobStore: this.#jobStore,
      membershipStore: this.#membershipStore,
      bus: this.#bus,
      gate: this.#gate,
      clock: this.#clock,
      random: this.#random.fork(),
      queue: options.queue,
      works,
      workConcurrency: options.workConcurrency,
      recordStore: (record) => this.#observeStore(record),
      recordJobs: (record) => this.#observeJobs(record),
      queueOf: (id) => this.#checkers.queueOf(id),
      handlerMs: () => this.#decide.int(0, options.handlerMsMax),
      handlerFails: () => this.#decide.chance(options.handlerFailChance),
      onView: (id, hosts) => {
        this.#viewsChanged = true
        this.#log(`view ${id}: ${hosts.length} engines`)
      },
      onDefect: (id, where, defect) => this.#checkers.fail('other', `defect on ${id} in ${where}: ${defect instanceof Error ? defect.stack : String(defect)}`),
    })
  }

  #failed(): boolean {
    return this.#checkers.violations.length > this.#checkers.knownFailing.size || this.#matching.violations.length > 0
  }

  #liveIds(): string[] {
    return this.#hosts.filter((host) => host.alive).map((host) => host.id)
  }

  // The view most live engines hold now (ties: the first seen).
  #agreedView(): ReadonlyArray<string> {
    const counts = new Map<string, { view: ReadonlyArray<string>; count: number }>()
    for (const host of this.#hosts) {
      if (!host.alive) continue
      const view = host.view()
      const key = view.join(',')
      const entry = counts.get(key) ?? { view, count: 0 }
      entry.count++
      counts.set(key, entry)
    }
    let best: { view: ReadonlyArray<string>; count: number } = { view: [], count: 0 }
    for (const entry of counts.values()) if (entry.count > best.count) best = entry
    return best.view
  }

  // Runs until every live engine's view satisfies `agrees` (or `steadyMs` passes), and measures it.
  async #converge(kind: MembershipChange['kind'], hostId: string | null, agrees: (view: ReadonlyArray<string>) => boolean, before?: ReadonlyArray<string>): Promise<MembershipChange> {
    const atMs = this.#clock.now()
    const untilMs = atMs + Math.max(this.#options.steadyMs, 30_000)
    this.#viewsChanged = true
    let convergedMs: number | null = null
    await this.#runUntil(untilMs, kind, () => {
      if (!this.#viewsChanged) return false
      this.#viewsChanged = false
      // Engines still to start have no view yet: the group has not converged.
      if (this.#starts.length > 0 || !this.#hosts.every((host) => !host.alive || agrees(host.view()))) return false
      convergedMs = this.#clock.now() - atMs
      return true
    })
    this.#log(`${kind}${hostId === null ? '' : ` ${hostId}`} converged ${convergedMs === null ? 'never' : `after ${convergedMs} ms`}`)
    const after = this.#agreedView()
    return { kind, hostId, atMs: atMs - epochMs, convergedMs, rebalance: before === undefined ? null : rebalance(this.#queueNames, this.#options.queue.partitions, before, after) }
  }

  #runFor(ms: number, phase: string): Promise<void> {
    return this.#runUntil(this.#clock.now() + ms, phase, () => false)
  }

  // The world loop: every parked call runs (in an order the seed picks), then time moves to the
  // next timer, never past `untilMs`; `done` is asked after every round.
  async #runUntil(untilMs: number, phase: string, done: () => boolean): Promise<void> {
    let reportedAtMs = this.#clock.now()
    while (this.#clock.now() < untilMs && !this.#failed()) {
      await this.#runAllIo()
      this.#restartDue()
      if (done()) return
      if (this.#gate.pending().length > 0) continue
      const now = this.#clock.now()
      const next = this.#clock.nextDueMs()
      // A slow call may have moved the clock past `untilMs` already.
      this.#clock.advanceTo(Math.max(now, Math.min(untilMs, next === undefined ? now + idleStepMs : Math.min(next, now + idleStepMs))))
      if (this.#clock.now() - reportedAtMs >= progressEveryMs) {
        reportedAtMs = this.#clock.now()
        this.#onProgress(phase, reportedAtMs - epochMs)
      }
    }
  }

  // Runs the calls parked now and those they park in turn, one at a time, until none is parked
  // or a slow call moved the clock (the loop then looks at the world at its new time: with many
  // engines, calls keep parking more and the slow ones keep moving time, so "none parked" alone
  // might never come).
  async #runAllIo(): Promise<void> {
    const startedAtMs = this.#clock.now()
    for (;;) {
      await quiesce()
      let pending = this.#gate.pending().length
      if (pending === 0 || this.#clock.now() !== startedAtMs) return
      // A round runs as many calls as were parked; what they park waits for the next round.
      for (; pending > 0 && this.#gate.pending().length > 0; pending--) await this.#runIo(this.#gate.take(this.#decide.int(0, this.#gate.pending().length - 1)))
    }
  }

  async #runIo(io: PendingIo): Promise<void> {
    this.#ioRuns++
    const faults = this.#faultsOn ? this.#options.faults : null
    if (faults !== null && io.label.startsWith(busLabelPrefix) && this.#decide.chance(faults.busDrop)) {
      // NOTIFY gives no receipt: the sender hears success either way.
      this.#fault('busDrop', `${io.hostId} ${io.label} is lost in transit`)
      io.resolve(undefined)
      return
    }
    // A slow call waits on a timer of its own and is parked again: with thousands of calls a
    // virtual second, moving the shared clock for each slow one (as the small worlds do) would
    // run time away from every other engine's heartbeats.
    if (faults !== null && !io.label.startsWith('late ') && this.#decide.chance(faults.latency)) {
      const delayMs = this.#decide.int(1, latencyMsMax)
      this.#fault('latency', `${io.hostId} ${io.label} takes ${delayMs} ms`)
      this.#clock.setTimer(delayMs, () => {
        if (this.#hosts.some((host) => host.id === io.hostId && host.alive)) this.#gate.park(io.hostId, `late ${io.label}`, io.isWrite, io.run).then(io.resolve, io.reject)
      })
      return
    }
    const chances: IoFaultChances<ScaleFaultName> | undefined =
      faults === null
        ? undefined
        : {
            slow: { name: 'latency', chance: 0, msMax: latencyMsMax },
            unavailable: { name: 'unavailable', chance: faults.unavailable },
            crash: { name: 'crashAfterCommit', chances: [faults.crashAfterCommit] },
            maybeCommitted: { name: 'maybeCommitted', chance: faults.maybeCommitted },
          }
    if (faultBeforeRun(io, chances, this.#ioFaultWorld)) return
    const outcome = await runParked(io)
    if (faultAfterRun(io, outcome, chances, this.#ioFaultWorld)) return
    if (outcome.ok) this.#countForwarding(io.label)
    const line = deliver(io, outcome)
    if (this.#keepTrace) this.#log(line)
  }

  #countForwarding(given: string): void {
    const label = given.startsWith('late ') ? given.slice('late '.length) : given
    if (!label.startsWith(`${busLabelPrefix}send`)) return
    if (label.includes(' poll ')) this.#forwardedPolls++
    else if (label.includes(' claimed ')) this.#handOvers++
  }

  // ------------------------------------------------------------ load, faults, restarts

  // Producers: every tick, the rate's share of jobs, each from a random live engine to a random queue.
  #armEnqueues(): void {
    const tick = () => {
      if (!this.#enqueuing) return
      this.#clock.setTimer(enqueueTickMs, tick)
      this.#enqueueCarry += (this.#options.enqueuePerS * enqueueTickMs) / 1_000
      const live = this.#hosts.filter((host) => host.alive)
      for (; this.#enqueueCarry >= 1 && live.length > 0; this.#enqueueCarry--) {
        const host = this.#decide.pick(live)
        const queue = this.#decide.pick(this.#queueNames)
        const payload = { n: ++this.#enqueueSequence }
        host
          .queue(queue)
          .enqueue(payload)
          .then(
            (id) => this.#checkers.clientEnqueued(id),
            // Refused or ambiguous: the boundary says whether it committed; the audit owes it if so.
            () => {},
          )
      }
    }
    this.#clock.setTimer(enqueueTickMs, tick)
  }

  #fault(name: ScaleFaultName, line: string): void {
    this.#faults[name]++
    this.#log(`FAULT ${name}: ${line}`)
  }

  // A call's fault crashed its host: it restarts a drawn while later (before its row lapses).
  #crashForAWhile(hostId: string): number {
    const host = this.#hosts.find((candidate) => candidate.id === hostId)
    if (host === undefined || !host.alive) return 0
    const dropped = host.crash()
    this.#restarts.push({ host, atMs: this.#wakeAt(this.#decide.int(restartMsMin, restartMsMax)) })
    return dropped
  }

  // A world timer that does nothing but make the loop stop at that moment; returns the moment.
  #wakeAt(delayMs: number): number {
    this.#clock.setTimer(delayMs, () => {})
    return this.#clock.now() + delayMs
  }

  // Starts the engines whose start is due, and restarts the crashed ones whose time has come (all of them once faults are off).
  #restartDue(): void {
    const now = this.#clock.now()
    for (let index = 0; index < this.#starts.length; ) {
      const start = this.#starts[index] as PendingStart
      if (start.atMs > now) index++
      else {
        this.#starts.splice(index, 1)
        this.#hosts.push(this.#makeHost(start.hostId, this.#works.get(start.hostId) ?? []))
      }
    }
    for (let index = this.#restarts.length - 1; index >= 0; index--) {
      const entry = this.#restarts[index] as PendingRestart
      if (entry.atMs > now && this.#faultsOn) continue
      this.#restarts.splice(index, 1)
      if (entry.host.alive) continue
      entry.host.restart()
      this.#log(`${entry.host.id} restarts`)
    }
  }

  // ------------------------------------------------------------ final phase and close

  async #finalPhase(): Promise<void> {
    this.#faultsOn = false
    this.#enqueuing = false
    this.#restartDue()
    this.#checkers.healed(this.#clock.now())
    this.#lastClaimMs = Math.max(this.#lastClaimMs, this.#clock.now())
    this.#log('HEAL: faults off, crashed engines back up (the dead one stays down), enqueues stop; the work loops deliver the rest')
    const untilMs = this.#clock.now() + this.#options.drainMsMax
    let quietSinceMs: number | null = null
    let checkedAtMs = Number.NEGATIVE_INFINITY
    await this.#runUntil(untilMs, 'drain', () => {
      const now = this.#clock.now()
      // Scanning every job is the costly question: ask it once per 100 ms of virtual time.
      if (now - checkedAtMs < enqueueTickMs) return false
      checkedAtMs = now
      const live = this.#checkers.liveDeliverable(now).map((entry) => entry.split(' ')[0] as string)
      // Jobs left only by the known mechanism (their task with Matching long past any hand-over)
      // will not move: the audit reports them apart.
      const stuck = live.filter((id) => this.#lastStep.get(id) === 'confirm' && now - (this.#lastStepAtMs.get(id) ?? now) >= strandedAfterMs)
      const blocked = new Set(stuck.map((id) => this.#checkers.queueOf(id)))
      if (live.some((id) => !blocked.has(this.#checkers.queueOf(id)))) {
        quietSinceMs = null
        // Past a lapse of the longest claim (a crashed engine's) and every retry backoff, a world
        // in which no claim commits is not going to deliver what is left: the audit judges it.
        return now - this.#lastClaimMs >= this.#options.queue.visibilityTimeoutS * 1_000 + stuckAfterLapseMs
      }
      quietSinceMs ??= now
      return now - quietSinceMs >= drainQuietMs
    })
  }

  async #closeAll(): Promise<void> {
    this.#faultsOn = false
    let closed = 0
    const alive = this.#hosts.filter((host) => host.alive)
    for (const host of alive) void host.mb.close().then(() => closed++, () => closed++)
    for (let turns = 0; closed < alive.length && turns < 1_000_000; turns++) {
      await quiesce()
      const pending = this.#gate.pending().length
      if (pending > 0) await this.#runIo(this.#gate.take(0))
      else if (closed < alive.length) {
        const next = this.#clock.nextDueMs()
        this.#clock.advanceTo(next === undefined ? this.#clock.now() + idleStepMs : Math.max(this.#clock.now(), next))
      }
    }
    if (closed < alive.length) this.#checkers.fail('other', `${alive.length - closed} engines never finished closing`)
  }

  // Every committed job's row, read straight from the shared database (no gate, no engine).
  async #finalRows(): Promise<Map<string, JobRecord | null>> {
    const rows = new Map<string, JobRecord | null>()
    for (const id of this.#checkers.jobIds()) rows.set(id, await this.#jobStore.getJob({ queue: this.#checkers.queueOf(id) as string, id }))
    return rows
  }

  // ------------------------------------------------------------ boundaries and trace

  #observeJobs(record: JobBoundaryRecord): void {
    if (this.#keepTrace) this.#log(`committed ${record.op} by ${record.hostId}: ${'ids' in record ? record.ids.join(',') : 'id' in record ? record.id : 'claims' in record ? record.claims.map((claim) => claim.id).join(',') : record.op === 'enqueue' ? record.job.id : ''}${record.op === 'claim' ? ` ${record.outcome.kind}` : ''}`)
    if (record.op === 'enqueue') this.#committedJobs++
    const ids = 'ids' in record ? record.ids : 'id' in record ? [record.id] : 'claims' in record ? record.claims.map((claim) => claim.id) : []
    for (const id of ids) {
      this.#lastStep.set(id, record.op)
      this.#lastStepAtMs.set(id, this.#clock.now())
    }
    if (record.op === 'claim') {
      if (record.outcome.kind === 'claimed') this.#lastClaimMs = this.#clock.now()
      this.#handled.started.set(record.id, (this.#handled.started.get(record.id) ?? 0) + 1)
      const violation = this.#ownership.observe(record)
      if (violation !== null) this.#checkers.fail(record.ownership?.seesNobody === true ? 'owner sees nobody' : 'owner delivers', violation)
    }
    this.#checkers.observe(record)
  }

  #observeStore(record: BoundaryRecord): void {
    this.#matching.observe(record, this.#clock.now())
  }

  #log(line: string): void {
    this.#trace.add(`@${this.#clock.now() - epochMs} ${line}`)
  }
}

/** The id of the `n`th engine (zero-padded, so ids sort in number order). */
export function engineId(n: number): string {
  return `engine-${String(n).padStart(3, '0')}`
}
