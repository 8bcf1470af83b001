/**
 * JobsWorld — the simulator's end-to-end mode (DESIGN.md §8): N processes each running the REAL
 * job engine (`makeMatchbox`, whose History is Jobs) as one group of engines over one shared
 * database (DESIGN.md §6) — one membership table and one bus per world — with every Matching
 * Store call, JobStore call, membership heartbeat and bus message parked in one IoGate and run
 * one at a time, one virtual clock (each host through its own HostClock), one seeded source of
 * decisions, and clients using the public job API (JobClients.ts). Workers own the partitions
 * membership gives them; producers own nothing; claims on a worker that does not own the queue
 * are forwarded to the owner, which claims and hands the job over on the bus. A seed may also
 * give every worker `work` loops on each queue (JobsHost.ts), whose handlers fail when the
 * world decides, beside the clients' own claims.
 *
 * Phases: a safety phase of `steps` decisions with faults (crash before a store call, crash after
 * a commit, restart, clock jumps, outages, ambiguous commits, latency, bus messages lost or
 * late, a worker cut off from the membership table); then heal (restart every host, faults off,
 * membership settles) and a final phase in which workers ack what they hold and claim and ack
 * everything they can, time moves past every runAt, backoff and deadline, `sweepExpired` runs on
 * every queue, every engine closes (without faults, whichever phase ended the run), and the job
 * checkers audit every job that was enqueued.
 *
 * Judged by JobCheckers.ts (from the JobStore boundary and the clients), OwnershipChecker.ts
 * (only a partition's owner delivers) and the Matching checkers (fencing, id uniqueness, ack
 * safety) over the Matching Store boundary.
 *
 * Does not: open or close the shared database (JobsSimulation.ts does).
 *
 * Length: past 400 lines because the world is one state machine over its hosts (build, crash,
 * restart, heal, settle membership, final phase) whose steps share the same host table and gate;
 * the clients, checkers, bus, membership store and swarm already live in files of their own.
 */
import { Unavailable } from '../../src/domain/errors.ts'
import { ManualClock } from '../../src/kernel/Clock.ts'
import { membershipHeartbeatIntervalMs, membershipHostTtlMs, ownershipCheckIntervalMs } from '../../src/kernel/Limits.ts'
import { type BusTap, makeMemoryBus } from '../../src/persistence/bus/MemoryBus.ts'
import type { JobRecord, JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeMemoryMembershipStore } from '../../src/persistence/membership/MemoryMembershipStore.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { BoundaryRecord } from '../matching/Boundary.ts'
import { Checkers } from '../matching/Checkers.ts'
import { Decisions } from '../core/Decisions.ts'
import { IoGate } from '../core/IoGate.ts'
import { type IoFaultChances, type IoFaultWorld, faultAfterRun, faultBeforeRun } from '../core/IoFaults.ts'
import { JobCheckers, type JobCheckerName, type JobsReport } from './JobCheckers.ts'
import { JobClients } from './JobClients.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import { JobsHost, type JobsHostDeps } from './JobsHost.ts'
import { type JobsFaultName, jobsFaultNames, type JobsSwarmOptions } from './JobsSwarm.ts'
import { type OwnershipCounts, OwnershipChecker } from './OwnershipChecker.ts'
import { busLabelPrefix } from './SimBus.ts'
import { membershipLabelPrefix } from './SimMembershipStore.ts'
import { HistoryRecord } from '../matching/ScriptedHistory.ts'
import { TraceLog } from '../core/TraceLog.ts'
import { advanceTime, deliver, epochMs, quiesce, runParked } from '../core/Turns.ts'

/** What a finished end-to-end run reports. */
export interface JobsRunResult {
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  /** Violations per checker. */
  readonly checkers: Readonly<Record<JobCheckerName, number>>
  readonly jobs: JobsReport
  /** Claims by an owner, and within the unload delay after losing the queue (OwnershipChecker.ts). */
  readonly ownership: OwnershipCounts
  /** Forwarded polls sent (by `from→to` route) and hand-overs sent back by owners. */
  readonly forwarding: { readonly polls: number; readonly routes: ReadonlyArray<string>; readonly handOvers: number }
  readonly steps: number
  readonly livenessSteps: number
  /** Client calls issued plus store calls run. */
  readonly events: number
  readonly ioRuns: number
  readonly faults: Readonly<Record<JobsFaultName, number>>
  readonly simulatedMs: number
  readonly traceHash: string
  readonly trace: ReadonlyArray<string>
}

/** How to build an end-to-end world. */
export interface JobsWorldConfig {
  readonly options: JobsSwarmOptions
  /** Each host's connection to the shared database (the same objects on memory). */
  readonly storeFor: (hostId: string) => Store
  readonly jobStoreFor: (hostId: string) => JobStore
  /** Explicit decisions consumed before the PRNG. */
  readonly script?: ReadonlyArray<number>
  readonly keepTrace?: boolean
  /** Sees every bus message before delivery and may drop it (the job mutation menu's bus bugs). */
  readonly busTap?: BusTap
  /** Wraps the membership view each engine routes by (the job mutation menu's routing bugs). */
  readonly wrapMembership?: JobsHostDeps['wrapMembership']
  /** Observes every committed JobStore call (timelines). */
  readonly onJobs?: (record: JobBoundaryRecord, nowMs: number) => void
  /** Observes faults, membership views and the heal (timelines). */
  readonly onEvent?: (event: JobsWorldEvent, nowMs: number) => void
}

/** A moment of an end-to-end run as a record, for timelines (the trace says the same in words). */
export type JobsWorldEvent =
  | { readonly kind: 'fault'; readonly name: JobsFaultName; readonly hostId?: string; readonly detail: string }
  | { readonly kind: 'view'; readonly hostId: string; readonly hosts: ReadonlyArray<string> }
  | { readonly kind: 'heal' }

// Time the final phase moves when nothing is claimable: past the retry curve's one-hour cap,
// every drawn runAt, deadline and expiry.
const finalJumpMs = 2 * 3_600_000
// Idle rounds (nothing claimed, time moved by finalJumpMs) after which the final phase stops.
const idleRoundsMax = 3
// Claim rounds without a jump before a round counts as idle: a zero-wait claim polls one of the
// queue's partitions (the one Matching sees tasks ready in, else the next in turn), so a job in
// another partition, or in a backlog not read yet, waits for a later claim, as a worker's would.
const quietRoundsMax = 8
// Time a quiet round lets pass, beat by beat: together the quiet rounds outlast the ownership
// check, so a host still serving a queue another host took over meanwhile learns it and reloads.
const quietRoundMs = ownershipCheckIntervalMs / 4
// Heartbeat rounds membership gets to settle after the heal or a final-phase jump (a view needs
// one beat of every worker; a few more cover beats still queued behind other I/O).
const settleRoundsMax = 10
// How long a worker cut off from the membership table stays cut: from shorter than a row's
// lifetime (nobody notices) to several lifetimes (its partitions move, then come back).
const cutMsMin = 2_000
const cutMsMax = 4 * membershipHostTtlMs
// Bus faults strike a message with this many times the seed's drawn chance (0.016–0.256 when on).
const busFaultScale = 8

// Every store, membership and bus call meets the same I/O faults; any call may be slow for up to 2 s.
function ioFaultChancesOf(faults: JobsSwarmOptions['faults']): IoFaultChances<JobsFaultName> {
  return {
    slow: { name: 'store.latency', chance: faults['store.latency'], msMax: 2_000 },
    unavailable: { name: 'store.unavailable', chance: faults['store.unavailable'] },
    crash: { name: 'crash.afterCommit', chances: [faults['crash.afterCommit']] },
    maybeCommitted: { name: 'store.maybeCommitted', chance: faults['store.maybeCommitted'] },
  }
}

/** One end-to-end run; `run()` once. */
export class JobsWorld {
  readonly #config: JobsWorldConfig
  readonly #options: JobsSwarmOptions
  readonly #decide: Decisions
  readonly #clock = new ManualClock(epochMs)
  readonly #gate = new IoGate()
  readonly #checkers = new JobCheckers()
  // The Matching checkers: a task counts as handled once Jobs' History tried to claim its job
  // (any answer), or once the job expired (Matching drops expired tasks without asking).
  readonly #handled = new HistoryRecord()
  readonly #matching = new Checkers(this.#handled)
  readonly #ownership = new OwnershipChecker()
  readonly #membershipStore = makeMemoryMembershipStore()
  readonly #bus = makeMemoryBus()
  // Workers cut off from the membership table, until when (world time).
  readonly #cutUntilMs = new Map<string, number>()
  readonly #forwarding = { polls: 0, routes: new Set<string>(), handOvers: 0 }
  readonly #hosts: JobsHost[] = []
  readonly #clients: JobClients
  readonly #faults = Object.fromEntries(jobsFaultNames.map((name) => [name, 0])) as Record<JobsFaultName, number>
  readonly #trace: TraceLog
  #events = 0
  #ioRuns = 0
  #step = 0
  #faultsOn = true
  readonly #ioFaultWorld: IoFaultWorld<JobsFaultName>

  constructor(config: JobsWorldConfig) {
    this.#config = config
    this.#options = config.options
    this.#decide = new Decisions(config.options.seed, config.script)
    this.#ioFaultWorld = {
      decide: this.#decide,
      clock: this.#clock,
      fault: (name, line, hostId) => this.#fault(name, line, hostId),
      isAlive: (hostId) => this.#hosts.some((host) => host.id === hostId && host.alive),
      crash: (hostId) => {
        const host = this.#hosts.find((candidate) => candidate.id === hostId)
        return host === undefined ? 0 : this.#crash(host)
      },
    }
    this.#trace = new TraceLog(config.keepTrace === true)
    const random = this.#decide.fork()
    if (config.busTap !== undefined) this.#bus.setTap(config.busTap)
    for (let i = 1; i <= this.#options.hosts; i++) {
      const hostId = `host-${i}`
      this.#hosts.push(
        new JobsHost({
          hostId,
          store: config.storeFor(hostId),
          jobStore: config.jobStoreFor(hostId),
          membershipStore: this.#membershipStore,
          bus: this.#bus,
          role: this.#options.roles[i - 1] ?? 'worker',
          ...(config.wrapMembership === undefined ? {} : { wrapMembership: config.wrapMembership }),
          gate: this.#gate,
          clock: this.#clock,
          random: random.fork(),
          queues: this.#options.queues,
          workLoops: this.#options.workLoops,
          workBatch: this.#options.workBatch,
          // A handler fails one time in five: the job is retried on its queue's curve.
          handlerFails: () => this.#decide.chance(0.2),
          recordStore: (record) => this.#observeStore(record),
          recordJobs: (record) => this.#observeJobs(record),
          queueOf: (id) => this.#checkers.queueOf(id),
          onView: (id, hosts) => {
            this.#log(`view ${id}: ${hosts.join(',') || 'nobody'}`)
            config.onEvent?.({ kind: 'view', hostId: id, hosts }, this.#clock.now())
          },
          onDefect: (id, where, defect) => this.#checkers.fail('other', `defect on ${id} in ${where}: ${defect instanceof Error ? defect.stack : String(defect)}`),
        }),
      )
    }
    this.#clients = new JobClients({ options: this.#options, decide: this.#decide, clock: this.#clock, hosts: this.#hosts, checkers: this.#checkers, log: (line) => this.#log(line) })
  }

  /** Runs both phases, closes every engine, and audits every job. */
  async run(): Promise<JobsRunResult> {
    for (this.#step = 0; this.#step < this.#options.steps && !this.#failed(); this.#step++) {
      await quiesce()
      await this.#safetyStep()
    }
    const finalPhaseRan = !this.#failed()
    const livenessSteps = finalPhaseRan ? await this.#finalPhase() : 0
    await this.#closeAll()
    await this.#bus.close()
    const jobs = this.#checkers.audit(await this.#finalRows(), finalPhaseRan)
    for (const violation of this.#matching.violations) this.#checkers.fail('matching', violation)
    return {
      ok: this.#checkers.violations.length === 0,
      violations: this.#checkers.violations,
      checkers: this.#checkers.counts,
      jobs,
      ownership: this.#ownership.counts(),
      forwarding: { polls: this.#forwarding.polls, routes: [...this.#forwarding.routes].sort(), handOvers: this.#forwarding.handOvers },
      steps: this.#step,
      livenessSteps,
      events: this.#events + this.#ioRuns,
      ioRuns: this.#ioRuns,
      faults: this.#faults,
      simulatedMs: this.#clock.now() - epochMs,
      traceHash: this.#trace.digest(),
      trace: this.#trace.lines,
    }
  }

  #failed(): boolean {
    return this.#checkers.violations.length > 0 || this.#matching.violations.length > 0
  }

  // ------------------------------------------------------------ safety phase

  async #safetyStep(): Promise<void> {
    if (this.#maybeFault()) return
    const pending = this.#gate.pending().length
    const choice = this.#decide.weighted([pending > 0 ? 12 : 0, 6, pending > 0 ? 1 : 4])
    if (choice === 0) return this.#runIo(this.#decide.int(0, pending - 1))
    if (choice === 1 && this.#clients.act()) {
      this.#events++
      return
    }
    this.#advance()
  }

  #maybeFault(): boolean {
    const faults = this.#options.faults
    const alive = this.#hosts.filter((host) => host.alive)
    const dead = this.#hosts.filter((host) => !host.alive)
    if (alive.length > 0 && this.#decide.chance(faults['crash.beforeStore'])) {
      const host = this.#decide.pick(alive)
      this.#fault('crash.beforeStore', `${host.id} crashes (${this.#crash(host)} parked calls dropped)`, host.id)
      return true
    }
    if (dead.length > 0 && this.#decide.chance(faults.restart * 4)) {
      const host = this.#decide.pick(dead)
      host.restart()
      this.#fault('restart', `${host.id} restarts`, host.id)
      return true
    }
    if (this.#decide.chance(faults['clock.jump'])) {
      const jump = this.#decide.int(1_000, 600_000)
      this.#clock.set(this.#clock.now() + jump)
      this.#fault('clock.jump', `clock jumps +${jump} ms`)
      return true
    }
    const workers = alive.filter((host) => host.role === 'worker' && !this.#isCut(host.id))
    if (workers.length > 0 && this.#decide.chance(faults['membership.cut'])) {
      const host = this.#decide.pick(workers)
      const cutMs = this.#decide.int(cutMsMin, cutMsMax)
      this.#cutUntilMs.set(host.id, this.#clock.now() + cutMs)
      this.#fault('membership.cut', `${host.id} cannot reach the membership table for ${cutMs} ms`, host.id)
      return true
    }
    return false
  }

  #crash(host: JobsHost): number {
    this.#clients.forget(host)
    return host.crash()
  }

  #fault(name: JobsFaultName, line: string, hostId?: string): void {
    this.#faults[name]++
    this.#log(`FAULT ${name}: ${line}`)
    this.#config.onEvent?.({ kind: 'fault', name, ...(hostId === undefined ? {} : { hostId }), detail: line }, this.#clock.now())
  }

  #isCut(hostId: string): boolean {
    return (this.#cutUntilMs.get(hostId) ?? Number.NEGATIVE_INFINITY) > this.#clock.now()
  }

  async #runIo(index: number): Promise<void> {
    const io = this.#gate.take(index)
    const faults = this.#faultsOn ? this.#options.faults : undefined
    const operation = io.label.split(' ')[0] as string
    this.#ioRuns++
    if (io.label.startsWith(membershipLabelPrefix) && this.#isCut(io.hostId)) {
      this.#log(`${io.hostId} ${io.label} cannot reach the membership table`)
      io.reject(new Unavailable({ operation, detail: 'cut off from the membership table', maybeCommitted: false }))
      return
    }
    if (faults !== undefined && io.label.startsWith(busLabelPrefix)) {
      // NOTIFY gives no receipt: the sender hears success either way. Per message, the drawn
      // chances are scaled up (bus steps are a small share of all I/O; hand-overs a smaller one
      // still), so a seed with the fault on loses hand-overs, not only due signals.
      if (this.#decide.chance(faults['bus.drop'] * busFaultScale)) {
        this.#fault('bus.drop', `${io.hostId} ${io.label} is lost in transit`, io.hostId)
        io.resolve(undefined)
        return
      }
      if (this.#decide.chance(faults['bus.delay'] * busFaultScale)) {
        this.#fault('bus.delay', `${io.hostId} ${io.label} is held back; it arrives after later steps`, io.hostId)
        io.resolve(undefined)
        this.#gate.park(io.hostId, `late ${io.label}`, false, io.run).catch(() => {})
        return
      }
    }
    const chances = faults === undefined ? undefined : ioFaultChancesOf(faults)
    if (faultBeforeRun(io, chances, this.#ioFaultWorld)) return
    const outcome = await runParked(io)
    if (faultAfterRun(io, outcome, chances, this.#ioFaultWorld)) return
    if (outcome.ok) this.#countForwarding(io.hostId, io.label)
    this.#log(deliver(io, outcome))
  }

  #countForwarding(hostId: string, label: string): void {
    const sent = /^(?:late )?bus\.send →(\S+) (poll|claimed) /.exec(label)
    if (sent === null) return
    if (sent[2] === 'claimed') this.#forwarding.handOvers++
    else {
      this.#forwarding.polls++
      this.#forwarding.routes.add(`${hostId}→${sent[1]}`)
    }
  }

  #advance(): void {
    advanceTime(this.#clock, this.#decide, (line) => this.#log(line))
  }

  // ------------------------------------------------------------ final phase and close

  async #finalPhase(): Promise<number> {
    this.#faultsOn = false
    this.#cutUntilMs.clear()
    for (const host of this.#hosts) if (!host.alive) host.restart()
    this.#log('HEAL: every host up, faults off; membership settles; workers ack what they hold, then claim and ack everything')
    this.#config.onEvent?.({ kind: 'heal' }, this.#clock.now())
    let steps = await this.#settleMembership()
    let idleRounds = 0
    let quietRounds = 0
    while (steps < this.#options.livenessStepsMax && idleRounds < idleRoundsMax && !this.#failed()) {
      this.#clients.ackAll()
      const claimedBefore = this.#clients.claimed
      for (const host of this.#hosts) {
        if (host.role !== 'worker') continue
        for (const queue of Object.keys(this.#options.queues)) this.#clients.claim(host, queue, 0, true)
      }
      steps += await this.#drain()
      if (this.#clients.claimed > claimedBefore) {
        idleRounds = 0
        quietRounds = 0
        continue
      }
      if (++quietRounds <= quietRoundsMax) {
        this.#log(`final: nothing claimed; claim again in ${quietRoundMs} ms`)
        steps += await this.#passTime(quietRoundMs)
        continue
      }
      quietRounds = 0
      idleRounds++
      this.#log(`final: nothing claimed; time +${finalJumpMs}`)
      // One jump, then every overdue timer fires once (a paused process waking), rather than
      // two hours of one-second heartbeat ticks that could not beat anyway.
      this.#clock.set(this.#clock.now() + finalJumpMs)
      this.#clock.advance(0)
      // Nobody could beat during the jump: every view lapsed; let them fill again.
      steps += await this.#settleMembership()
    }
    if (steps >= this.#options.livenessStepsMax) {
      const unsettled = this.#clients.unsettled()
      this.#checkers.fail('none stranded', `the final phase did not settle within ${this.#options.livenessStepsMax} steps; client calls never answered: ${unsettled.slice(0, 5).join(', ') || 'none'}`)
    }
    for (const queue of Object.keys(this.#options.queues)) this.#clients.sweep(this.#hosts[0] as JobsHost, queue)
    return steps + (await this.#drain())
  }

  // Moves time by `ms`, one heartbeat interval at a time, running what each interval parks.
  async #passTime(ms: number): Promise<number> {
    let steps = 0
    for (let passed = 0; passed < ms; passed += membershipHeartbeatIntervalMs) {
      this.#clock.advance(membershipHeartbeatIntervalMs)
      steps += await this.#drain()
    }
    return steps
  }

  // Runs I/O and heartbeat rounds until every live host's view shows exactly the live workers.
  async #settleMembership(): Promise<number> {
    const workers = this.#hosts.filter((host) => host.alive && host.role === 'worker').map((host) => host.id).sort().join(',')
    let steps = 0
    for (let round = 0; round < settleRoundsMax; round++) {
      steps += await this.#drain()
      if (this.#hosts.every((host) => !host.alive || host.view().join(',') === workers)) return steps
      this.#log(`settle: time +${membershipHeartbeatIntervalMs}`)
      this.#clock.advance(membershipHeartbeatIntervalMs)
    }
    return steps
  }

  // Runs parked I/O (and moves time when none is parked) until every client call has settled.
  async #drain(): Promise<number> {
    let steps = 0
    for (; steps < this.#options.livenessStepsMax; steps++) {
      await quiesce()
      if (this.#clients.unsettled().length === 0 && this.#gate.pending().length === 0) break
      const pending = this.#gate.pending().length
      if (pending > 0) await this.#runIo(this.#decide.int(0, pending - 1))
      else this.#advance()
    }
    return steps
  }

  async #closeAll(): Promise<void> {
    let closed = 0
    // Closing is judged without faults: after a safety-phase failure they are still on, and a
    // host crashing mid-close would never finish closing for a reason of the world's making.
    this.#faultsOn = false
    const alive = this.#hosts.filter((host) => host.alive)
    for (const host of alive) void host.mb.close().then(() => closed++, () => closed++)
    for (let turns = 0; closed < alive.length && turns < 100_000; turns++) {
      await quiesce()
      if (this.#gate.pending().length > 0) await this.#runIo(0)
      else if (closed < alive.length) this.#advance()
    }
    if (closed < alive.length) this.#checkers.fail('other', `${alive.length - closed} engines never finished closing`)
  }

  // Every committed job's row, read straight from the shared database (no gate, no engine).
  async #finalRows(): Promise<Map<string, JobRecord | null>> {
    const jobStore = this.#config.jobStoreFor('host-1')
    const rows = new Map<string, JobRecord | null>()
    for (const id of this.#checkers.jobIds()) rows.set(id, await jobStore.getJob({ queue: this.#checkers.queueOf(id) as string, id }))
    return rows
  }

  // ------------------------------------------------------------ boundaries and trace

  #observeJobs(record: JobBoundaryRecord): void {
    if (record.op === 'claim') {
      this.#handled.started.set(record.id, (this.#handled.started.get(record.id) ?? 0) + 1)
      const violation = this.#ownership.observe(record)
      if (violation !== null) this.#checkers.fail('owner delivers', violation)
    }
    this.#checkers.observe(record)
    this.#config.onJobs?.(record, this.#clock.now())
  }

  #observeStore(record: BoundaryRecord): void {
    if (record.op === 'checkpoint') {
      const now = this.#clock.now()
      for (const id of this.#checkers.jobIds()) {
        const expiresAtMs = this.#checkers.expiresAtOf(id)
        if (expiresAtMs !== null && expiresAtMs <= now) this.#handled.obsolete.add(id)
      }
    }
    this.#matching.observe(record, this.#clock.now())
  }

  #log(line: string): void {
    this.#trace.add(`${this.#step} @${this.#clock.now() - epochMs} ${line}`)
  }
}
