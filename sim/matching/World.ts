/**
 * World — the Matching workload of the one world loop (core/WorldLoop.ts, DESIGN.md §8, the
 * VOPR shape): N real Matching hosts over one shared store, a scripted History, and clients
 * that add tasks and poll. The loop owns every source of nondeterminism (which parked I/O runs
 * next, one at a time; when time moves; which fault strikes) and the trace; this file gives it
 * the hosts, the Matching faults (takeover, disagreeing membership, idle unloads), the clients,
 * the checkers and the liveness phase.
 *
 * Between decisions the runtime runs until quiescent: the hosts run Effect on a microtask
 * scheduler and every I/O is parked, so one event-loop turn drains all work.
 *
 * Phases: a safety phase of `steps` decisions with faults; then heal (restart every host, agree
 * on membership, stop rejections) and a liveness phase that runs until every accepted task was
 * delivered or the step budget is spent; then every host closes (drains, final checkpoints).
 *
 * Clients add tasks, poll, update user data and retire version `v1` of a family (its backlog
 * relocates to the default queue), each drawn from the one decision stream in a fixed order.
 */
import { makeInstantWatchdog } from '../core/InstantWatchdog.ts'
import { IdlePollChecker } from '../core/IdlePollChecker.ts'
import type { PhysicalQueueActor } from '../../src/actors/PhysicalQueueActor.ts'
import type { HostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'
import type { TaskType } from '../../src/domain/QueueKey.ts'
import { ownerOf } from '../../src/domain/Rendezvous.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import { idleUnloadMs, membershipUnloadDelayMs } from '../../src/kernel/Limits.ts'
import type { RecordStartResult } from '../../src/actors/History.ts'
import type { QueueCommand, QueueEvent } from '../../src/machines/PhysicalQueueProtocol.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { BoundaryRecord } from '../core/Boundary.ts'
import { type AddOutcome, Checkers, type DeliveryReport } from '../core/Checkers.ts'
import type { Decisions } from '../core/Decisions.ts'
import type { PendingIo } from '../core/IoGate.ts'
import type { IoFaultChances } from '../core/IoFaults.ts'
import { HistoryRecord } from '../core/HistoryRecord.ts'
import type { HistoryScript } from './ScriptedHistory.ts'
import { SimHost } from './SimHost.ts'
import { type FaultName, faultNames, type SwarmOptions } from './Swarm.ts'
import { epochMs, quiesce } from '../core/Turns.ts'
import { type FaultEvent, type Workload, WorldLoop } from '../core/WorldLoop.ts'

/** What a finished run reports. */
export interface RunResult {
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  readonly deliveries: DeliveryReport
  readonly steps: number
  readonly livenessSteps: number
  readonly events: number
  readonly ioRuns: number
  readonly faults: Readonly<Record<FaultName, number>>
  readonly simulatedMs: number
  readonly traceHash: string
  /** The last trace lines (all of them if `keepTrace`). */
  readonly trace: ReadonlyArray<string>
}

/** A moment of the run as a record, for timelines (the trace says the same in words). */
export type WorldEvent =
  | FaultEvent<FaultName>
  | { readonly kind: 'history'; readonly hostId: string; readonly jobId: string; readonly answer: RecordStartResult['kind'] }
  | { readonly kind: 'heal' }

/** How to build a world. */
export interface WorldConfig {
  readonly options: SwarmOptions
  /** The shared store each host's gated store wraps (a host may get its own connection). */
  readonly storeFor: (hostId: string) => Store
  /** Explicit decisions consumed before the PRNG (fast-check schedules). */
  readonly script?: ReadonlyArray<number>
  /** Keep every trace line (for --trace and timelines), not only the tail. */
  readonly keepTrace?: boolean
  /** Wraps the gated store of each host process (host-side mutations, sim/matching/Mutations.ts). */
  readonly wrapHostStore?: (hostId: string, store: Store) => Store
  /** Makes each host's book of waiting polls (a host-side mutation); default: the host's own. */
  readonly waitingPolls?: () => HostWaitingPolls
  /** Observes every store call at the boundary (timelines). */
  readonly onBoundary?: (record: BoundaryRecord, nowMs: number) => void
  /** Observes faults, History answers the hosts heard, and the heal (timelines). */
  readonly onEvent?: (event: WorldEvent, nowMs: number) => void
}

const pollsPerHostMax = 4

/** A simulated world; `run()` once. */
export class World {
  readonly #config: WorldConfig
  readonly #options: SwarmOptions
  readonly #loop: WorldLoop<FaultName>
  readonly #decide: Decisions
  readonly #clock: ManualClock
  readonly #history = new HistoryRecord()
  readonly #script: HistoryScript
  readonly #checkers: Checkers
  readonly #hosts: SimHost[] = []
  readonly #adds = new Map<string, AddOutcome>()
  readonly #families: Array<{ family: string; type: TaskType }> = []
  readonly #owners = new Map<string, string | null>()
  #jobSequence = 0
  // Ends a run whose machines step without end at one instant (sim/core/InstantWatchdog.ts).
  readonly #watchdog: ReturnType<typeof makeInstantWatchdog>
  // How each host spreads its waiting polls over its partitions of a family (sim/core/IdlePollChecker.ts),
  // judged from `#idleJudgedFromMs` (world time): once healed, and a partition that moved has unloaded.
  readonly #idlePolls: IdlePollChecker
  #idleJudgedFromMs = Number.POSITIVE_INFINITY

  constructor(config: WorldConfig) {
    this.#config = config
    this.#options = config.options
    this.#loop = new WorldLoop<FaultName>({
      seed: config.options.seed,
      faultNames,
      ...(config.script === undefined ? {} : { script: config.script }),
      ...(config.keepTrace === undefined ? {} : { keepTrace: config.keepTrace }),
      ...(config.onEvent === undefined ? {} : { onFault: config.onEvent }),
    })
    this.#decide = this.#loop.decide
    this.#clock = this.#loop.clock
    this.#script = {
      retryableChance: this.#options.faults['history.retryable'] * 20,
      obsoleteChance: this.#options.faults['history.obsolete'] * 10,
      alreadyStartedChance: this.#options.faults['history.alreadyStarted'] * 10,
    }
    this.#checkers = new Checkers(this.#history)
    this.#watchdog = makeInstantWatchdog(() => this.#clock.now(), `Matching world seed ${this.#options.seed}`, (detail) => this.#checkers.violations.push(detail))
    this.#idlePolls = new IdlePollChecker({
      fail: (_checker, sentence) => this.#checkers.violations.push(sentence),
      owns: (hostId, family, type, partition) => this.#hosts.find((host) => host.id === hostId)?.membership.ownerOf({ namespace: 'default', family, type, partition }) === hostId,
      judgedFrom: () => this.#idleJudgedFromMs,
    })
    for (let f = 0; f < this.#options.families; f++) for (const type of ['workflow', 'activity'] as const) this.#families.push({ family: `family-${f}`, type })
    const hostIds = Array.from({ length: this.#options.hosts }, (_, i) => `host-${i + 1}`)
    const random = this.#decide.fork()
    for (const hostId of hostIds) {
      this.#hosts.push(
        new SimHost({
          hostId,
          store: config.storeFor(hostId),
          gate: this.#loop.gate,
          clock: this.#clock,
          random: random.fork(),
          history: this.#history,
          script: this.#script,
          partitionCount: this.#options.partitionCount,
          allHosts: hostIds,
          record: (record) => {
            if (record.op === 'attempt') this.#log(`attempt ${record.caller.instance} ${record.call}${record.rangeId === null ? '' : ` r${record.rangeId}`}${record.retry ? ' (retry)' : ''}`)
            if (record.op === 'answered') this.#log(`answered ${record.caller.instance} ${record.call} → ${record.answer}`)
            if (record.op === 'unloaded') this.#log(`unloaded ${record.caller.instance} (${record.reason})`)
            this.#checkers.observe(record, this.#clock.now())
            config.onBoundary?.(record, this.#clock.now())
          },
          ...(config.wrapHostStore === undefined ? {} : { wrapHostStore: config.wrapHostStore }),
          ...(config.waitingPolls === undefined ? {} : { waitingPolls: config.waitingPolls }),
          onRunaway: (id, detail) => this.#checkers.violations.push(`on ${id}: ${detail}`),
          onStep: (id, incarnation, queue, event, commands) => this.#onStep(id, incarnation, queue, event, commands),
          onDefect: (id, queue, defect) => this.#checkers.violations.push(`defect on ${id} in ${queue}: ${defect instanceof Error ? defect.stack : String(defect)}`),
        }),
      )
    }
  }

  /** Runs both phases and the final checks. */
  async run(): Promise<RunResult> {
    const loop = this.#loop
    const livenessSteps = await loop.run(this.#workload())
    const deliveries = this.#checkers.deliveries(this.#adds)
    // History's scripted rejections strike inside its calls; they count with the other faults.
    for (const [name, count] of Object.entries(this.#history.injected)) loop.faults[name as FaultName] += count
    return {
      ok: this.#checkers.violations.length === 0,
      violations: this.#checkers.violations,
      deliveries,
      steps: loop.step,
      livenessSteps,
      events: loop.events,
      ioRuns: loop.ioRuns,
      faults: loop.faults,
      simulatedMs: this.#clock.now() - epochMs,
      traceHash: loop.traceHash(),
      trace: loop.traceLines(),
    }
  }

  // What this workload gives the world loop: its faults and clients, in the order they are drawn.
  #workload(): Workload<FaultName> {
    const loop = this.#loop
    const faults = this.#options.faults
    const hostOf = (hostId: string) => this.#hosts.find((host) => host.id === hostId)
    const hostStrike = (name: FaultName, strike: (host: SimHost) => string) => () => {
      if (!this.#hosts.some((host) => host.alive) || !this.#decide.chance(faults[name])) return false
      const host = this.#decide.pick(this.#aliveHosts())
      loop.fault(name, strike(host), host.id)
      return true
    }
    return {
      safetySteps: this.#options.steps,
      failed: () => this.#checkers.violations.length > 0,
      strikes: [
        loop.crashStrike('crash.beforeStore', () => faults['crash.beforeStore'], this.#hosts),
        loop.restartStrike('restart', () => faults.restart * 4, this.#hosts),
        hostStrike('takeover', (host) => {
          host.membership.set([host.id])
          return `${host.id} believes it owns every partition`
        }),
        hostStrike('membership.disagree', (host) => {
          const view = this.#hosts.filter((other) => other === host || this.#decide.chance(0.5)).map((other) => other.id)
          host.membership.set(view)
          return `${host.id} now sees [${view.join(', ')}]`
        }),
        () => {
          if (!this.#decide.chance(faults.idleUnload)) return false
          this.#clock.advance(idleUnloadMs + 1)
          loop.fault('idleUnload', `clock +${idleUnloadMs + 1} ms (idle queues unload)`)
          return true
        },
        loop.clockJumpStrike('clock.jump', () => faults['clock.jump'], 3_600_000),
      ],
      actions: [
        loop.ioAction,
        { weight: () => this.#options.produceWeight, run: () => this.#produce() },
        { weight: () => this.#options.pollWeight, run: () => this.#poll() },
        loop.advanceAction,
        { weight: () => this.#options.userDataWeight, run: () => this.#updateUserData() },
        { weight: () => this.#options.retireWeight, run: () => this.#retire() },
      ],
      ioFaultChances: (io) => this.#ioFaultChances(io, io.label.startsWith('history.')),
      delivered: (io, outcome) => {
        if (io.label.startsWith('history.') && outcome.ok && this.#config.onEvent !== undefined) {
          const answer = (outcome.value as RecordStartResult).kind
          this.#config.onEvent({ kind: 'history', hostId: io.hostId, jobId: io.label.split(' ')[1] as string, answer }, this.#clock.now())
        }
      },
      isAlive: (hostId) => hostOf(hostId)?.alive === true,
      crash: (hostId) => hostOf(hostId)?.crash() ?? 0,
      liveness: () => this.#liveness(),
      startClosing: () => this.#hosts.map((host) => host.host.close()),
      closeFailed: (unfinished) => this.#checkers.violations.push(`${unfinished} hosts never finished closing`),
    }
  }

  #aliveHosts(): SimHost[] {
    return this.#hosts.filter((host) => host.alive)
  }

  // ------------------------------------------------------------ actions

  // History calls are slow rather than refused; an append of several tasks may crash mid-batch.
  #ioFaultChances(io: PendingIo, isHistory: boolean): IoFaultChances<FaultName> {
    const faults = this.#options.faults
    const midBatch = io.label.startsWith('append') && !io.label.endsWith('×1')
    return {
      slow: isHistory ? { name: 'history.slow', chance: faults['history.slow'], msMax: 2_000 } : { name: 'store.latency', chance: faults['store.latency'], msMax: 500 },
      unavailable: isHistory ? null : { name: 'store.unavailable', chance: faults['store.unavailable'] },
      crash: {
        name: midBatch && faults['crash.midBatch'] > 0 ? 'crash.midBatch' : 'crash.afterCommit',
        chances: midBatch ? [faults['crash.afterCommit'], faults['crash.midBatch']] : [faults['crash.afterCommit']],
      },
      maybeCommitted: { name: 'store.maybeCommitted', chance: faults['store.maybeCommitted'] },
    }
  }

  // Clients mostly reach the host that owns a partition of the family (as a router would) and
  // sometimes any live host, which may own nothing of it or disagree about who does.
  #routeTo(family: string, type: TaskType): SimHost | undefined {
    const alive = this.#hosts.filter((host) => host.alive)
    if (alive.length === 0) return undefined
    if (this.#decide.chance(0.8)) {
      const partition = this.#decide.int(0, this.#options.partitionCount - 1)
      const owner = this.#ownerOf(family, type, partition)
      const host = alive.find((candidate) => candidate.id === owner)
      if (host !== undefined) return host
    }
    return this.#decide.pick(alive)
  }

  // The rendezvous owner among every host (alive or not), which never changes during a run.
  #ownerOf(family: string, type: TaskType, partition: number): string | null {
    const name = `${family}/${type}/${partition}`
    let owner = this.#owners.get(name)
    if (owner === undefined) this.#owners.set(name, (owner = ownerOf({ namespace: 'default', family, type, partition }, this.#hosts.map((host) => host.id))))
    return owner
  }

  #produce(): void {
    const { family, type } = this.#decide.pick(this.#families)
    const host = this.#routeTo(family, type)
    if (host === undefined) return this.#advance()
    const jobId = `job-${++this.#jobSequence}`
    const priority = this.#decide.chance(this.#options.priorityChance) ? this.#decide.int(1, 9) : 0
    const pinned = this.#decide.chance(this.#options.versionChance)
    this.#adds.set(jobId, 'unknown')
    this.#log(`add ${jobId} → ${host.id} ${family}/${type} p${priority}${pinned ? ' @v1' : ''}`)
    const versionDirective = pinned ? ({ kind: 'pinned', version: 'v1' } as const) : ({ kind: 'unversioned' } as const)
    host.host.addTask({ namespace: 'default', family, type, task: { jobId, priority, versionDirective } }).then(
      () => this.#adds.set(jobId, 'accepted'),
      () => this.#adds.set(jobId, 'failed'),
    )
  }

  // A client reads a family's user data and writes it back with the version it read: racing
  // clients conflict, and the checker holds every committed write to a linearizable CAS.
  #updateUserData(): void {
    const alive = this.#hosts.filter((host) => host.alive)
    if (alive.length === 0) return this.#advance()
    const host = this.#decide.pick(alive)
    const { family } = this.#decide.pick(this.#families)
    const currentVersion = this.#decide.pick(['v1', 'v2'])
    this.#log(`userData ${host.id} ${family} → currentVersion ${currentVersion}`)
    host.host
      .getUserData('default', family)
      .then((userData) => host.host.updateUserData('default', family, userData?.version ?? 0, { currentVersion }))
      .catch(() => {})
  }

  // An operator retires version v1 of a family on one host: the host drains its v1 queues, takes
  // their fence and relocates their backlogs to the default queues, amid the faults of the run.
  #retire(): void {
    const alive = this.#hosts.filter((host) => host.alive)
    if (alive.length === 0) return this.#advance()
    const host = this.#decide.pick(alive)
    const { family, type } = this.#decide.pick(this.#families)
    const incarnation = host.incarnation
    this.#log(`retire ${host.id} ${family}/${type} @v1`)
    this.#checkers.ownershipLoss.retiring(host.id, incarnation, 1)
    host.host.retireVersion({ namespace: 'default', family, type, version: 'v1' }).then(
      (moved) => {
        this.#checkers.ownershipLoss.retiring(host.id, incarnation, -1)
        this.#log(`retired ${host.id} ${family}/${type} @v1: ${moved} moved`)
      },
      () => this.#checkers.ownershipLoss.retiring(host.id, incarnation, -1),
    )
  }

  #poll(target?: SimHost, family?: { family: string; type: TaskType }, versionOverride?: string | null): void {
    const which = family ?? this.#decide.pick(this.#families)
    const host = target ?? this.#routeTo(which.family, which.type)
    if (host === undefined || (target === undefined && host.pollsInFlight >= pollsPerHostMax)) return this.#advance()
    const waitMs = this.#decide.int(0, 2_000)
    const version = versionOverride !== undefined ? versionOverride : this.#decide.chance(this.#options.versionChance) ? 'v1' : null
    host.pollsInFlight++
    const identity = `${host.id}-poller`
    this.#log(`poll ${host.id} ${which.family}/${which.type}${version === null ? '' : ` @${version}`} wait ${waitMs}`)
    const incarnation = host.incarnation
    host.host.poll({ namespace: 'default', family: which.family, type: which.type, identity, waitMs, version }).then(
      () => {
        if (host.incarnation === incarnation) host.pollsInFlight--
      },
      () => {
        if (host.incarnation === incarnation) host.pollsInFlight--
      },
    )
  }

  #advance(): void {
    this.#loop.advance()
  }

  // ------------------------------------------------------------ liveness

  async #liveness(): Promise<number> {
    this.#loop.faultsOn = false
    this.#script.retryableChance = 0
    this.#script.obsoleteChance = 0
    this.#script.alreadyStartedChance = 0
    const all = this.#hosts.map((host) => host.id)
    for (const host of this.#hosts) {
      if (!host.alive) host.restart()
      host.membership.set(all)
    }
    this.#log(`HEAL: every host up, membership agreed, faults off (polls in flight: ${this.#hosts.map((host) => `${host.id}=${host.pollsInFlight}`).join(' ')})`)
    // A partition the agreed view moved away is unloaded by its old owner within the unload delay.
    this.#idleJudgedFromMs = this.#clock.now() - epochMs + membershipUnloadDelayMs
    this.#config.onEvent?.({ kind: 'heal' }, this.#clock.now())
    let steps = 0
    for (; steps < this.#options.livenessStepsMax && this.#checkers.violations.length === 0; steps++) {
      await quiesce()
      if (this.#allDelivered() && this.#loop.gate.pending().length === 0) break
      for (const host of this.#hosts) {
        if (host.pollsInFlight > 0) continue
        for (const family of this.#families) {
          this.#poll(host, family, null)
          // Pinned tasks wait in their version's queue: only a poller of that version takes them.
          if (this.#options.versionChance > 0) this.#poll(host, family, 'v1')
        }
      }
      await quiesce()
      const pending = this.#loop.gate.pending().length
      if (pending > 0) await this.#loop.runIo(this.#decide.int(0, pending - 1))
      else this.#advance()
    }
    return steps
  }

  #allDelivered(): boolean {
    // Keys, not entries: this runs every liveness step over every add of the run.
    for (const jobId of this.#adds.keys()) if (this.#adds.get(jobId) === 'accepted' && !this.#history.isHandled(jobId)) return false
    return true
  }

  // ------------------------------------------------------------ trace

  #onStep(hostId: string, incarnation: number, queue: PhysicalQueueActor, event: QueueEvent, commands: ReadonlyArray<QueueCommand>): void {
    this.#loop.events++
    this.#log(`${hostId} ${queue.queue} ${event.type} → ${commands.map((command) => command.type).join(',')}`)
    this.#watchdog.step(() => `${hostId} in ${queue.queue}: ${event.type}`)
    this.#idlePolls.step(hostId, incarnation, queue, this.#clock.now() - epochMs)
  }

  #log(line: string): void {
    this.#loop.log(line)
  }
}
