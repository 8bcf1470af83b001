/**
 * WorldLoop — the one run loop of every simulated world (DESIGN.md §8, the VOPR shape), generic
 * over a workload as TigerBeetle's cluster harness is over its state machine. The loop owns the
 * world's sources of nondeterminism and its record: the seeded decisions, the virtual clock, the
 * I/O gate, which parked call runs next and the faults that strike it, the fault counts and the
 * trace. The workload (Matching's World.ts, the job engine's JobsWorld.ts) supplies the hosts,
 * the clients, the faults of its own kind, the checkers and the liveness phase.
 *
 * Phases, in order:
 * - safety: up to `safetySteps` decisions, stopped early once the workload's checkers failed.
 *   Each step first tries the workload's fault strikes in order (the first that strikes is the
 *   step), then chooses one action by weight among the workload's actions, which include the
 *   loop's own `ioAction` (run one parked call) and `advanceAction` (move time);
 * - liveness: the workload heals its world and runs it until every client was answered (its own
 *   loop, built from the loop's `runIo`, `advance` and `drain`);
 * - close: the workload starts closing its hosts and the loop runs the world, faults off, until
 *   they finished (or a bound of turns passes).
 *
 * Every decision is drawn from the one stream in the order the workload lists its strikes and
 * actions, so a seed replays the same world.
 *
 * Does not: build hosts, judge a run, or say what a fault does to a workload's hosts beyond
 * crashing and restarting them.
 */
import { ManualClock } from '../../src/kernel/Clock.ts'
import { Decisions } from './Decisions.ts'
import { type IoFaultChances, type IoFaultWorld, faultAfterRun, faultBeforeRun } from './IoFaults.ts'
import { IoGate, type PendingIo } from './IoGate.ts'
import { TraceLog } from './TraceLog.ts'
import { advanceTime, deliver, epochMs, type IoOutcome, quiesce, runParked } from './Turns.ts'

/** A host as the loop's own faults see it. */
export interface LoopHost {
  readonly id: string
  readonly alive: boolean
  restart(): void
}

/** An injected fault as a record, for timelines (the trace says the same in words). */
export interface FaultEvent<Name extends string> {
  readonly kind: 'fault'
  readonly name: Name
  readonly hostId?: string
  readonly detail: string
}

/** One action a safety step may choose: its weight given how many parked calls may run, and what it does. */
export interface SafetyAction {
  readonly weight: (runnable: number) => number
  readonly run: (runnable: ReadonlyArray<number> | number) => void | Promise<void>
}

/** What a workload gives the loop. */
export interface Workload<Name extends string> {
  /** Decisions of the safety phase. */
  readonly safetySteps: number
  /** True once a checker failed: the safety phase stops. */
  failed(): boolean
  /** The faults a safety step tries, in order; each draws its chance and says whether it struck. */
  readonly strikes: ReadonlyArray<() => boolean>
  /** The actions a safety step chooses among, by weight, in this order. */
  readonly actions: ReadonlyArray<SafetyAction>
  /** Indices of the parked calls that may run now (absent: all of them). */
  runnableIo?(): number[]
  /** Settles a taken call before the I/O faults when the world refuses it (a host cut off, a message lost); true if it did. */
  interceptIo?(io: PendingIo): boolean
  /** The I/O fault chances of one taken call (asked only while faults are on). */
  ioFaultChances(io: PendingIo): IoFaultChances<Name>
  /** Hears the outcome of a call just before its caller does. */
  delivered?(io: PendingIo, outcome: IoOutcome): void
  isAlive(hostId: string): boolean
  /** Crashes a host; returns how many of its parked calls were dropped with it. */
  crash(hostId: string): number
  /** Heals the world and runs it until live; returns its steps. */
  liveness(): Promise<number>
  /** Starts closing the hosts; the loop runs the world until every promise settled. */
  startClosing(): ReadonlyArray<Promise<unknown>>
  /** `unfinished` hosts never finished closing. */
  closeFailed(unfinished: number): void
}

/** How to build a loop. */
export interface WorldLoopConfig<Name extends string> {
  readonly seed: number
  /** Explicit decisions consumed before the PRNG (fast-check schedules). */
  readonly script?: ReadonlyArray<number>
  /** Keep every trace line (for --trace and timelines), not only the tail. */
  readonly keepTrace?: boolean
  /** Every fault name the workload counts (all start at zero). */
  readonly faultNames: ReadonlyArray<Name>
  /** Observes every injected fault (timelines). */
  readonly onFault?: (event: FaultEvent<Name>, nowMs: number) => void
}

// Turns the close phase may take before hosts still closing count as never finished.
const closeTurnsMax = 100_000

/** The run loop of one world; the workload calls `run` once. */
export class WorldLoop<Name extends string> {
  readonly decide: Decisions
  readonly clock = new ManualClock(epochMs)
  readonly gate = new IoGate()
  readonly faults: Record<Name, number>
  /** The current safety step (the trace prefixes each line with it). */
  step = 0
  /** Events the workload counts (state-machine steps, client calls). */
  events = 0
  /** Parked calls taken to run. */
  ioRuns = 0
  /** False from the heal on: taken calls meet no faults. */
  faultsOn = true
  /** The one action that runs a parked call, chosen among the runnable ones. */
  readonly ioAction: SafetyAction
  /** The one action that moves time (`advance`). */
  readonly advanceAction: SafetyAction
  readonly #config: WorldLoopConfig<Name>
  readonly #trace: TraceLog
  // The trace prefix of the current step and time (see `log`).
  #prefix = ''
  #prefixStep = -1
  #prefixMs = Number.NaN
  #workload: Workload<Name> | undefined
  readonly #ioFaultWorld: IoFaultWorld<Name>

  constructor(config: WorldLoopConfig<Name>) {
    this.#config = config
    this.decide = new Decisions(config.seed, config.script)
    this.faults = Object.fromEntries(config.faultNames.map((name) => [name, 0])) as Record<Name, number>
    this.#trace = new TraceLog(config.keepTrace === true)
    this.#ioFaultWorld = {
      decide: this.decide,
      clock: this.clock,
      fault: (name, line, hostId) => this.fault(name, line, hostId),
      isAlive: (hostId) => this.#workloadOf().isAlive(hostId),
      crash: (hostId) => this.#workloadOf().crash(hostId),
    }
    this.ioAction = {
      weight: (runnable) => (runnable > 0 ? 12 : 0),
      run: (runnable) => this.runIo(typeof runnable === 'number' ? this.decide.int(0, runnable - 1) : (runnable[this.decide.int(0, runnable.length - 1)] as number)),
    }
    this.advanceAction = { weight: (runnable) => (runnable > 0 ? 1 : 4), run: () => this.advance() }
  }

  /** Runs the safety phase, the workload's liveness phase and the close; returns the liveness steps. */
  async run(workload: Workload<Name>): Promise<number> {
    this.#workload = workload
    for (this.step = 0; this.step < workload.safetySteps && !workload.failed(); this.step++) {
      await quiesce()
      await this.#safetyStep(workload)
    }
    const livenessSteps = await workload.liveness()
    await this.#closeAll(workload)
    return livenessSteps
  }

  async #safetyStep(workload: Workload<Name>): Promise<void> {
    for (const strike of workload.strikes) if (strike()) return
    const runnable = workload.runnableIo === undefined ? this.gate.pending().length : workload.runnableIo()
    const count = typeof runnable === 'number' ? runnable : runnable.length
    const { actions } = workload
    const choice = this.decide.weighted(actions.map((action) => action.weight(count)))
    // Returned, not awaited: the hosts' microtasks interleave with the loop's turns, so the number
    // of promise hops between two steps is part of a seed's world.
    return (actions[choice] as SafetyAction).run(runnable)
  }

  // ------------------------------------------------------------ faults every workload has

  /** With `chance`, one live host crashes before its next store call (its parked calls are dropped). */
  crashStrike(name: Name, chance: () => number, hosts: ReadonlyArray<LoopHost>): () => boolean {
    return () => {
      const alive = hosts.filter((host) => host.alive)
      if (alive.length === 0 || !this.decide.chance(chance())) return false
      const host = this.decide.pick(alive)
      this.fault(name, `${host.id} crashes (${this.#workloadOf().crash(host.id)} parked calls dropped)`, host.id)
      return true
    }
  }

  /** With `chance`, one crashed host restarts. */
  restartStrike(name: Name, chance: () => number, hosts: ReadonlyArray<LoopHost>): () => boolean {
    return () => {
      if (hosts.every((host) => host.alive) || !this.decide.chance(chance())) return false
      const host = this.decide.pick(hosts.filter((other) => !other.alive))
      host.restart()
      this.fault(name, `${host.id} restarts`, host.id)
      return true
    }
  }

  /** With `chance`, the clock jumps forward by a drawn 1 s…`jumpMsMax`. */
  clockJumpStrike(name: Name, chance: () => number, jumpMsMax: number): () => boolean {
    return () => {
      if (!this.decide.chance(chance())) return false
      const jump = this.decide.int(1_000, jumpMsMax)
      this.clock.set(this.clock.now() + jump)
      this.fault(name, `clock jumps +${jump} ms`)
      return true
    }
  }

  /** With `chance`, strikes one of `eligible` for a drawn `msMin…msMax`; `strike` applies it and says what happened. */
  strikeHostFor<Host extends { readonly id: string }>(name: Name, chance: number, eligible: ReadonlyArray<Host>, msMin: number, msMax: number, strike: (host: Host, ms: number) => string): boolean {
    if (eligible.length === 0 || !this.decide.chance(chance)) return false
    const host = this.decide.pick(eligible)
    const ms = this.decide.int(msMin, msMax)
    this.fault(name, strike(host, ms), host.id)
    return true
  }

  /** Counts, logs and reports one injected fault. */
  fault(name: Name, line: string, hostId?: string): void {
    this.faults[name]++
    this.log(`FAULT ${name}: ${line}`)
    this.#config.onFault?.({ kind: 'fault', name, ...(hostId === undefined ? {} : { hostId }), detail: line }, this.clock.now())
  }

  // ------------------------------------------------------------ turns

  /** Takes the parked call at `index`, runs it through the workload's refusals and the I/O faults, and hands its caller the outcome. */
  async runIo(index: number): Promise<void> {
    const workload = this.#workloadOf()
    const io = this.gate.take(index)
    this.ioRuns++
    if (workload.interceptIo?.(io) === true) return
    const chances = this.faultsOn ? workload.ioFaultChances(io) : undefined
    const nextTimerMs = this.clock.nextDueMs() ?? Number.POSITIVE_INFINITY
    if (faultBeforeRun(io, chances, this.#ioFaultWorld)) return
    // A slow call moved the clock past a timer: what the timer started runs to quiescence
    // first, so the call's outcome meets it the same way whatever the store (an in-memory call
    // answers in microtasks, a database's after real I/O).
    if (this.clock.now() >= nextTimerMs) await quiesce()
    const outcome = await runParked(io)
    if (faultAfterRun(io, outcome, chances, this.#ioFaultWorld)) return
    workload.delivered?.(io, outcome)
    this.log(deliver(io, outcome))
  }

  /** Moves time (core/Turns.ts `advanceTime`). */
  advance(): void {
    advanceTime(this.clock, this.decide, (line) => this.log(line))
  }

  /** Runs parked calls in a drawn order, moving time when none is parked, until `done` (checked after each quiet turn) or `stepsMax` steps; returns the steps. */
  async drain(done: () => boolean, stepsMax: number): Promise<number> {
    let steps = 0
    for (; steps < stepsMax; steps++) {
      await quiesce()
      if (done()) break
      const pending = this.gate.pending().length
      if (pending > 0) await this.runIo(this.decide.int(0, pending - 1))
      else this.advance()
    }
    return steps
  }

  async #closeAll(workload: Workload<Name>): Promise<void> {
    // Closing is judged without faults: after a safety-phase failure they may still be on, and a
    // host crashing mid-close would never finish closing for a reason of the world's making.
    this.faultsOn = false
    let closed = 0
    const closing = workload.startClosing()
    for (const promise of closing) void promise.then(() => closed++, () => closed++)
    for (let turns = 0; closed < closing.length && turns < closeTurnsMax; turns++) {
      await quiesce()
      if (this.gate.pending().length > 0) await this.runIo(0)
      else if (closed < closing.length) this.advance()
    }
    if (closed < closing.length) workload.closeFailed(closing.length - closed)
  }

  // ------------------------------------------------------------ trace

  /** Appends a trace line, prefixed with the step and the time since the epoch. */
  log(line: string): void {
    // Most lines of a step share its prefix: it is rebuilt only when the step or the time moves.
    const nowMs = this.clock.now()
    if (this.#prefixStep !== this.step || this.#prefixMs !== nowMs) {
      this.#prefixStep = this.step
      this.#prefixMs = nowMs
      this.#prefix = `${this.step} @${nowMs - epochMs} `
    }
    this.#trace.add(this.#prefix + line)
  }

  /** The hash of the whole trace (call once, at the end). */
  traceHash(): string {
    return this.#trace.digest()
  }

  /** The trace lines kept (all of them with `keepTrace`, else the tail). */
  traceLines(): ReadonlyArray<string> {
    return this.#trace.lines
  }

  #workloadOf(): Workload<Name> {
    if (this.#workload === undefined) throw new Error('the world loop has no workload yet: call run() first')
    return this.#workload
  }
}
