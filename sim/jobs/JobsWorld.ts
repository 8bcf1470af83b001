/**
 * JobsWorld — the job-engine workload of the one world loop (core/WorldLoop.ts, DESIGN.md §8),
 * the simulator's end-to-end mode: N processes each running the REAL job engine (`makeMatchbox`,
 * whose History is Jobs) as one group of engines over one shared database (DESIGN.md §6) — one
 * membership table and one bus per world — with every Matching Store call, JobStore call,
 * membership heartbeat and bus message parked in the loop's IoGate and run one at a time, the
 * loop's virtual clock (each host through its own HostClock) and seeded decisions, and clients
 * using the public job API (JobClients.ts). The loop runs the phases, the I/O faults and the
 * trace; this file gives it the hosts, the faults of a group of engines (cuts, pauses, bus
 * messages lost or late, heartbeats held on a row's lock, `stop()`), the clients, the checkers and the final phase. Workers own the partitions
 * membership gives them; producers own nothing; claims on a worker that does not own the queue
 * are forwarded to the owner, which claims and hands the job over on the bus. A seed may also
 * give every worker `work` loops on each queue (JobsHost.ts), whose handlers fail when the
 * world decides, beside the clients' own claims.
 *
 * Phases: a safety phase of `steps` decisions with faults (crash before a store call, crash after
 * a commit, restart, clock jumps, outages, ambiguous commits, latency, bus messages lost or
 * late, a worker cut off from the membership table; in a held-heartbeats world only heartbeats
 * held back, which give up at the end of their hold or at the heal); then heal (restart every
 * host, faults off, membership settles) and a liveness phase in which clients ack what they hold and the work
 * loops deliver the rest, while virtual time advances in steps no longer than the shortest
 * pending timer — never over pending work, so a job that waits for a scan, a lapse or a retry
 * shows as waiting — until no live job can be delivered any more (or a bound passes); then
 * `sweepExpired` runs on every queue, every engine closes (without faults, whichever phase ended
 * the run), and the job checkers audit every job that was enqueued. Work loops are stopped (and
 * started again) at random moments in both phases.
 *
 * Prompt delivery, judged in the liveness phase once membership settled: a due job (JobCheckers'
 * `dueJobs`) of a queue on which some live worker's loops have a free handler starts within
 * `promptDeliveryBoundMs` of the later of the two; judged at every step of time, and since
 * nothing changes between two steps, a job seen waiting at one step waited until the next, so
 * one that starts only as time moves past the bound is late too. A queue one of whose
 * partitions found its range taken (or failed to acquire) is judged again only once that partition may have waited
 * out its restart back-off (the Matching ownership-loss rule makes it wait). A rate-limited
 * queue's jobs wait for tokens and are not judged (RateChecker.ts judges the rate). Producers go
 * on enqueueing after the heal (JobsSwarm.ts `healedEnqueues`), so jobs also arrive while workers
 * wait idle, and on some seeds send waves (JobsSwarm.ts `healedWaves`, on a stream of their own):
 * after a quiet spell in which only timers run, several jobs of one queue at one instant, headed
 * by one tenant's; half of them land while every worker's loops on the queue are stopped, and
 * each worker's start again at a moment of its own, all at once (a rolling deploy); on some seeds
 * some are keyed (JobsSwarm.ts `keyedWaves`, on a stream of their own): first a job whose key a
 * live job holds, through the host whose handler runs that job or through a worker, and last one
 * scheduled for later under a key of its own, which a later keyed wave's first job carries. On
 * some seeds membership moves once healed (JobsSwarm.ts `membershipMoves`, MembershipMoves.ts): an
 * engine leaves the group or joins it while workers wait idle, jobs arrive as the views agree, and
 * prompt delivery is judged again, with the same bound, from the unload delay after every live
 * engine's view agreed (a range lost meanwhile holds its queue back only where the loser still
 * owns the partition then; a poll forwarded to an engine that had left, until its timeout); on
 * some of them each leave races a job enqueued in its instant, for the leaver's idle worker or one
 * of its waiting claims (JobsSwarm.ts `leaveRaces`).
 *
 * On some seeds the shared memory store's head statements (claims of a queue's head, a pass's
 * reservations) skip the rows another such statement in flight holds, as PostgreSQL's `FOR UPDATE
 * SKIP LOCKED` does (JobsSwarm.ts `rowLockChance`, SimRowLocks.ts; decided on a stream of their own).
 *
 * Operators (on seeds that draw them, JobsSwarm.ts `control`) pause and resume queues and cancel
 * jobs that handlers are running, drawn on a decision stream of their own after every fault
 * strike of a safety step; the heal resumes every queue they paused.
 *
 * Judged by JobCheckers.ts (from the JobStore boundary and the clients), RateChecker.ts, FairnessChecker.ts, FenceChecker.ts, HandlerCheckers.ts (what
 * the work loops' handlers were given), ControlCheckers.ts (pauses, cancels of running jobs and
 * their handlers' signals), DispatchChecker.ts (a line poll matched for nobody ends, and a queue
 * that moved away lets its parked claims and kept jobs go, read from each engine's dispatch
 * steps), GiveBackChecker.ts (give-backs announced to the queue's owners, and due by the time
 * announced, read from the store boundary and each engine's due signals), OwnershipChecker.ts
 * (only a partition's owner delivers) and the Matching checkers (fencing, id uniqueness, ack
 * safety) over the Matching Store boundary.
 *
 * Does not: open or close the shared database (JobsSimulation.ts does).
 *
 * Length: past 400 lines because the world is one state machine over its hosts (build, crash,
 * restart, heal, settle membership, final phase) whose steps share the same host table and gate;
 * the clients, checkers, bus, membership store and swarm already live in files of their own.
 */
import { makeInstantWatchdog } from '../core/InstantWatchdog.ts'
import { Unavailable } from '../../src/domain/errors.ts'
import { decodeQueueKey } from '../../src/domain/QueueKey.ts'
import { jobsNamespace } from '../../src/jobs/QueueRouting.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Random } from '../../src/kernel/Random.ts'
import { acquireRetryMaxMs, jobDueScanIntervalMs, membershipHeartbeatIntervalMs, membershipHostTtlMs, membershipUnloadDelayMs, outageRetryMaxMs } from '../../src/kernel/Limits.ts'
import { type BusTap, makeMemoryBus } from '../../src/persistence/bus/MemoryBus.ts'
import type { JobRecord, JobStore } from '../../src/persistence/jobs/JobStore.ts'
import { makeMemoryMembershipStore } from '../../src/persistence/membership/MemoryMembershipStore.ts'
import type { Store } from '../../src/persistence/queues/Store.ts'
import type { BoundaryRecord } from '../core/Boundary.ts'
import { Checkers } from '../core/Checkers.ts'
import { FairnessChecker } from './FairnessChecker.ts'
import { FenceChecker } from './FenceChecker.ts'
import { RateChecker } from './RateChecker.ts'
import { Decisions } from '../core/Decisions.ts'
import type { IoGate, PendingIo } from '../core/IoGate.ts'
import type { IoFaultChances } from '../core/IoFaults.ts'
import { JobCheckers, type JobCheckerName, jobCheckerNames, type JobsReport } from './JobCheckers.ts'
import { knownFailingCheckersOn } from './KnownEngineFailures.ts'
import type { SimStoreKind } from '../core/Determinism.ts'
import { JobClients } from './JobClients.ts'
import { HandlerCheckers } from './HandlerCheckers.ts'
import type { JobBoundaryRecord } from './JobBoundary.ts'
import { type HandlerEvent, JobsHost, type JobsHostDeps } from './JobsHost.ts'
import { ControlCheckers } from './ControlCheckers.ts'
import { ClaimOrderModel } from './ClaimOrderModel.ts'
import { DispatchChecker } from './DispatchChecker.ts'
import { IdlePollChecker } from '../core/IdlePollChecker.ts'
import { GiveBackChecker } from './GiveBackChecker.ts'
import { type HostRole, type JobsFaultName, jobsFaultNames, type JobsSwarmOptions } from './JobsSwarm.ts'
import { type OwnershipCounts, OwnershipChecker } from './OwnershipChecker.ts'
import { busLabelPrefix } from './SimBus.ts'
import { membershipLabelPrefix } from './SimMembershipStore.ts'
import { HistoryRecord } from '../core/HistoryRecord.ts'
import { epochMs } from '../core/Turns.ts'
import { type FaultEvent, type Workload, WorldLoop } from '../core/WorldLoop.ts'
import type { JobsMutant } from './JobMutations.ts'
import { MembershipMoves } from './MembershipMoves.ts'
import { type RowLockSlot, SimRowLocks } from './SimRowLocks.ts'

/** What a finished end-to-end run reports. */
export interface JobsRunResult {
  readonly ok: boolean
  readonly violations: ReadonlyArray<string>
  /** Violations of the checkers known to fail on the current engine (KnownEngineFailures.ts): shown, not failing the seed. */
  readonly knownFailing: ReadonlyArray<string>
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
  /** The store kind the world runs on (which known engine failures apply). */
  readonly store: SimStoreKind
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
  /** The job mutation menu's bus, engine-store and stop hooks (JobMutations.ts). */
  readonly mutant?: Pick<JobsMutant, 'wrapBus' | 'wrapEngineJobStore' | 'onWorkStopped' | 'dispatchMachine' | 'matchingWaitingPolls'>
  /**
   * Where the shared memory store reads which head statements hold rows (SimRowLocks.ts); absent
   * (the SQL stores): the world makes no row-lock window, whatever the seed drew.
   */
  readonly rowLockSlot?: RowLockSlot
  /** Observes every committed JobStore call (timelines). */
  readonly onJobs?: (record: JobBoundaryRecord, nowMs: number) => void
  /** Observes faults, membership views, handler runs and the heal (timelines). */
  readonly onEvent?: (event: JobsWorldEvent, nowMs: number) => void
}

/** A moment of an end-to-end run as a record, for timelines (the trace says the same in words). */
export type JobsWorldEvent =
  | FaultEvent<JobsFaultName>
  | { readonly kind: 'view'; readonly hostId: string; readonly hosts: ReadonlyArray<string> }
  | { readonly kind: 'heal' }
  | { readonly kind: 'handler'; readonly hostId: string; readonly jobId: string; readonly claimToken: string; readonly started: boolean }

/**
 * How long a due job may wait, once healed, while its queue has an idle worker. With faults off
 * every call completes at the instant it runs, so a hand-over, a due signal and a riding claim
 * take no virtual time; what may legitimately pass is one `claimRetryDelayMs` (100 ms) pause of a
 * claim that lost a race and looks again. 250 ms allows that pause twice over and stays a
 * quarter of the one-second due scan (`jobDueScanIntervalMs`): a job that waited for the scan is
 * caught. The same bound holds in the windows after a membership move (MembershipMoves.ts), where
 * the healthy engine's longest wait on seeds 1…300 on memory was 213 ms.
 */
export const promptDeliveryBoundMs = 250
// Prompt delivery is judged from this long after membership settled (or last changed): a loop
// still backing off from an outage retries within `outageRetryMaxMs`, and a partition that moved
// is unloaded by its old owner within the unload delay and taken by its new one at its next
// membership beat.
const promptJudgedAfterMs = outageRetryMaxMs + membershipUnloadDelayMs + membershipHeartbeatIntervalMs
// A physical queue of the jobs namespace that finds its range taken (a write answered
// `OwnershipLost`) or fails to acquire dies, and its partition waits out its restart back-off (at
// most `acquireRetryMaxMs`: the Matching ownership-loss rule) before it may acquire again,
// however membership settled. Prompt delivery of its queue is judged again from this long after.
const promptJudgedAfterLossMs = acquireRetryMaxMs + promptJudgedAfterMs
// The liveness phase ends, whatever is left (the audit judges it), once this long passed with no
// claim committing: past every drawn runAt (≤ 20 s), expiry (≤ 60 s), retry curve of the drawn
// budgets and bases (≤ 40 s a step) and visibility timeout (≤ 30 s). Measured from the last
// claim, not from the heal: one loop with handlers of up to 90 s drains a backlog of twenty
// jobs in longer than that, and a world still working is not stranded.
const livenessMsMax = 10 * 60_000
// Longest time step when no timer is pending at all.
const idleStepMs = jobDueScanIntervalMs
// Heartbeat rounds membership gets to settle after the heal or a final-phase jump (a view needs
// one beat of every worker; a few more cover beats still queued behind other I/O).
const settleRoundsMax = 10
// How long a worker cut off from the membership table stays cut: from shorter than a row's
// lifetime (nobody notices) to several lifetimes (its partitions move, then come back).
const cutMsMin = 2_000
const cutMsMax = 4 * membershipHostTtlMs
// How long a worker stays cut off from the job store: from shorter than the shortest visibility
// timeout to past the longest (30 s), so running handlers' claims lapse.
const storeCutMsMin = 1_000
const storeCutMsMax = 40_000
// Every job store call's trace label starts so (SimJobStore.ts); a heartbeat's names its job and claim next.
const heartbeatLabelPrefix = 'job.heartbeat '
const jobLabelPrefix = 'job.'
// The operators' stream of decisions is seeded apart from the world's (any constant that differs from Decisions' own mask).
const operatorSeedMask = 0x0c7a
// The producers that go on after the heal draw from a stream of their own, seeded so.
const healedProducerSeedMask = 0x0e4c
// Chance, per final-phase step, that one of those enqueues comes now.
const healedEnqueueChance = 0.1
// The waves after the heal (JobsSwarm.ts `healedWaves`) draw from a stream of their own, seeded
// so; each comes after a quiet spell this long, from when prompt delivery is judged or the last wave.
const waveSeedMask = 0x0a7e
const waveQuietMsMin = 2_000
const waveQuietMsMax = 8_000
// How long a held wave keeps each worker's loops on its queue stopped (and until their stop() resolved).
const waveHoldMsMin = 200
const waveHoldMsMax = 3_000
// Keyed waves (JobsSwarm.ts `keyedWaves`) draw what they add on a stream of their own, seeded so.
const keyedWaveSeedMask = 0x05a9
// How long a worker's stop-the-world pause lasts: from shorter than the shortest visibility
// timeout (nobody notices) to past the longest (30 s) and a membership row's lifetime.
const pauseMsMin = 500
const pauseMsMax = 40_000
// Bus faults strike a message with this many times the seed's drawn chance (0.016–0.256 when on).
const busFaultScale = 8
// The held heartbeats' stream of decisions is seeded apart from the world's (JobsSwarm.ts `heldHeartbeats`).
const heartbeatHoldSeedMask = 0x0b3a
// The row-lock windows' stream of decisions (JobsSwarm.ts `rowLockChance`), likewise.
const rowLockSeedMask = 0x1c6d

// Every store, membership and bus call meets the same I/O faults; any call may be slow for up to 2 s.
function ioFaultChancesOf(faults: JobsSwarmOptions['faults']): IoFaultChances<JobsFaultName> {
  return {
    slow: { name: 'store.latency', chance: faults['store.latency'], msMax: 2_000 },
    unavailable: { name: 'store.unavailable', chance: faults['store.unavailable'] },
    crash: { name: 'crash.afterCommit', chances: [faults['crash.afterCommit']] },
    maybeCommitted: { name: 'store.maybeCommitted', chance: faults['store.maybeCommitted'] },
  }
}

// One worker's loops a held wave stopped: ready once its stop() resolved, started again from `untilMs`.
interface HeldLoops {
  readonly host: JobsHost
  readonly incarnation: number
  readonly untilMs: number
  resolved: boolean
}

/** One end-to-end run; `run()` once. */
export class JobsWorld {
  readonly #config: JobsWorldConfig
  readonly #options: JobsSwarmOptions
  readonly #loop: WorldLoop<JobsFaultName>
  readonly #decide: Decisions
  readonly #clock: ManualClock
  readonly #gate: IoGate
  readonly #checkers: JobCheckers
  // Ends a run whose machines step without end at one instant (sim/core/InstantWatchdog.ts).
  readonly #watchdog: ReturnType<typeof makeInstantWatchdog>
  readonly #rates: RateChecker
  readonly #fairness: FairnessChecker
  readonly #fences: FenceChecker
  // The Matching checkers: a task counts as handled once Jobs' History tried to claim its job
  // (any answer), or once the job expired (Matching drops expired tasks without asking).
  readonly #handled = new HistoryRecord()
  readonly #matching = new Checkers(this.#handled)
  readonly #ownership = new OwnershipChecker()
  readonly #handlers = new HandlerCheckers({ fail: (checker, sentence) => this.#checkers.fail(checker, sentence), claimOf: (id) => this.#checkers.claimOf(id) })
  readonly #controls = new ControlCheckers({ fail: (checker, sentence) => this.#checkers.fail(checker, sentence), queueOf: (id) => this.#checkers.queueOf(id) })
  readonly #claimOrder = new ClaimOrderModel()
  readonly #dispatches = new DispatchChecker({ fail: (checker, sentence) => this.#checkers.fail(checker, sentence), orderOf: (id) => this.#claimOrder.claimedFrom(id) })
  readonly #idlePolls = new IdlePollChecker({
    fail: (checker, sentence) => this.#checkers.fail(checker, sentence),
    owns: (hostId, queue, _type, partition) => this.#hosts.find((host) => host.id === hostId)?.ownedPartitions(queue).includes(partition) === true,
    judgedFrom: (queue) => this.#promptFrom(queue, Number.NEGATIVE_INFINITY) - epochMs,
  })
  readonly #giveBacks = new GiveBackChecker({
    fail: (checker, sentence) => this.#checkers.fail(checker, sentence),
    queueOf: (id) => this.#checkers.queueOf(id),
    ownsEvery: (hostId, queue) => this.#hosts.find((host) => host.id === hostId)?.ownedPartitions(queue).length === (this.#options.queues[queue]?.partitions ?? 1),
    epochMs,
  })
  // The operators' own decisions (JobsSwarm.ts `control`): a stream apart from the world's, so a
  // seed whose controls are off draws exactly what it drew before they existed.
  readonly #operator: Decisions
  // The producers after the heal (JobsSwarm.ts `healedEnqueues`): their stream, and how many enqueues are left.
  readonly #healedProducer: Decisions
  // Which heartbeats are held back, and for how long (JobsSwarm.ts `heldHeartbeats`): a stream
  // apart from the world's, so a seed without them draws what it drew before they existed.
  readonly #heartbeatHolds: Decisions
  // The last heartbeat call decided (call ids rise with arrival), and those held back, until when.
  #heartbeatsSeenId = 0
  readonly #heldUntilMs = new Map<number, number>()
  #healedLeft: number
  // The waves after the heal: their stream, how many are left, and when the next one comes.
  readonly #wave: Decisions
  #wavesLeft: number
  #nextWaveMs = Number.POSITIVE_INFINITY
  // Keyed waves: their stream, how many were sent, and per queue the key of the job the last one scheduled for later.
  readonly #keyedWave: Decisions
  #keyedWaves = 0
  readonly #scheduledKeys = new Map<string, string>()
  // A held wave's queue and the workers' loops on it that it stopped and has not started again.
  #held: { readonly queue: string; readonly loops: Array<HeldLoops> } | null = null
  // Queues an operator paused and has not resumed (as the operators believe), and every queue ever paused.
  readonly #pausedByOperator = new Set<string>()
  readonly #everPaused = new Set<string>()
  // Handlers running now, per `host/incarnation/queue`.
  readonly #busy = new Map<string, number>()
  // Per queue: since when some live worker's loops have had a free handler (absent: none has).
  readonly #idleSince = new Map<string, number>()
  readonly #promptTold = new Set<string>()
  // The jobs the last prompt judgement saw waiting with a worker idle on their queue.
  #promptWaiting: Array<{ readonly id: string; readonly queue: string; readonly dueSinceMs: number; readonly idleSince: number; readonly fromMs: number; readonly told: string }> = []
  #promptFromMs = Number.POSITIVE_INFINITY
  // Per queue: when prompt delivery is judged again after one of its partitions lost its range.
  readonly #promptFromOfQueue = new Map<string, number>()
  // When the last claim committed (the final phase ends once none has for `livenessMsMax`).
  #lastClaimMs = Number.NEGATIVE_INFINITY
  #claimsCommitted = 0
  readonly #membershipStore = makeMemoryMembershipStore()
  readonly #bus = makeMemoryBus()
  // Workers cut off from the membership table, until when (world time).
  readonly #cutUntilMs = new Map<string, number>()
  // Workers cut off from the job store, until when (world time).
  readonly #storeCutUntilMs = new Map<string, number>()
  readonly #forwarding = { polls: 0, routes: new Set<string>(), handOvers: 0 }
  readonly #hosts: JobsHost[] = []
  readonly #clients: JobClients
  // Membership moves after the heal (JobsSwarm.ts `membershipMoves`) and their windows.
  readonly #moves: MembershipMoves
  // The row-lock windows (JobsSwarm.ts `rowLockChance`), on a stream of their own; absent: none.
  readonly #rowLocks: SimRowLocks | undefined
  #closing = false
  #finalPhaseRan = false

  constructor(config: JobsWorldConfig) {
    this.#config = config
    this.#checkers = new JobCheckers(knownFailingCheckersOn(config.store))
    this.#watchdog = makeInstantWatchdog(() => this.#clock.now(), `jobs world seed ${config.options.seed}`, (detail) => this.#checkers.violations.push(detail))
    this.#options = config.options
    this.#rates = new RateChecker(config.options.queues, (sentence) => this.#checkers.fail('rate limit', sentence))
    this.#fairness = new FairnessChecker((sentence) => this.#checkers.fail('fair pass', sentence))
    this.#fences = new FenceChecker((sentence) => this.#checkers.fail('claims fenced', sentence))
    this.#loop = new WorldLoop<JobsFaultName>({
      seed: config.options.seed,
      faultNames: jobsFaultNames,
      ...(config.script === undefined ? {} : { script: config.script }),
      ...(config.keepTrace === undefined ? {} : { keepTrace: config.keepTrace }),
      ...(config.onEvent === undefined ? {} : { onFault: config.onEvent }),
    })
    this.#decide = this.#loop.decide
    this.#operator = new Decisions(config.options.seed ^ operatorSeedMask)
    this.#healedProducer = new Decisions(config.options.seed ^ healedProducerSeedMask)
    this.#heartbeatHolds = new Decisions(config.options.seed ^ heartbeatHoldSeedMask)
    this.#healedLeft = config.options.healedEnqueues
    this.#wave = new Decisions(config.options.seed ^ waveSeedMask)
    this.#wavesLeft = config.options.healedWaves
    this.#keyedWave = new Decisions(config.options.seed ^ keyedWaveSeedMask)
    this.#clock = this.#loop.clock
    this.#gate = this.#loop.gate
    this.#rowLocks =
      config.rowLockSlot === undefined || config.options.rowLockChance === 0
        ? undefined
        : new SimRowLocks({ slot: config.rowLockSlot, gate: this.#gate, decide: new Decisions(config.options.seed ^ rowLockSeedMask), chance: config.options.rowLockChance, log: (line) => this.#log(line) })
    const random = this.#decide.fork()
    if (config.busTap !== undefined) this.#bus.setTap(config.busTap)
    for (let i = 1; i <= this.#options.hosts; i++) this.#hosts.push(this.#makeHost(`host-${i}`, this.#options.roles[i - 1] ?? 'worker', random, false))
    this.#clients = new JobClients({ options: this.#options, decide: this.#decide, clock: this.#clock, hosts: this.#hosts, checkers: this.#checkers, holds: (id, token) => this.#handlers.clientHolds(id, token), answered: (host, incarnation, queue, id) => this.#answered(host.id, incarnation, queue, id), log: (line) => this.#log(line) })
    this.#moves = new MembershipMoves({
      seed: config.options.seed,
      moves: config.options.membershipMoves,
      leaveRaces: config.options.leaveRaces,
      clock: this.#clock,
      queues: config.options.queues,
      hosts: this.#hosts,
      clients: this.#clients,
      makeWorker: (hostId, random) => this.#makeHost(hostId, 'worker', random, true),
      heldByWorld: (host) => this.#held?.loops.some((loop) => loop.host === host) === true,
      log: (line) => this.#log(line),
    })
  }

  // One host of the world, its engine's ids and tokens drawn from a fork of `random`
  // (`loopsLater`: a worker whose `work` loops wait for `startAllWork`).
  #makeHost(hostId: string, role: HostRole, random: Random, loopsLater: boolean): JobsHost {
    const config = this.#config
    return new JobsHost({
      hostId,
      store: config.storeFor(hostId),
      jobStore: config.jobStoreFor(hostId),
      membershipStore: this.#membershipStore,
      bus: this.#bus,
      role,
      ...(loopsLater ? { loopsLater } : {}),
      ...(config.wrapMembership === undefined ? {} : { wrapMembership: config.wrapMembership }),
      gate: this.#gate,
      clock: this.#clock,
      random: random.fork(),
      queues: this.#options.queues,
      workLoops: this.#options.workLoops,
      workBatch: this.#options.workBatch,
      handOvers: this.#options.handOvers,
      ...(this.#rowLocks === undefined ? {} : { rowLocks: this.#rowLocks }),
      // A handler fails one time in five: the job is retried on its queue's curve.
      handlerFails: () => this.#decide.chance(0.2),
      handlerMs: (queue) => this.#decide.int(0, this.#options.handlerMsMax[queue] ?? 0),
      honourSignal: this.#options.control.honourSignal && (this.#controlsOn() || this.#options.heldHeartbeats),
      onHandler: (event) => this.#onHandler(event),
      onDispatchStep: (incarnation, queue, event, commands, dispatch) => {
        this.#watchdog.step(() => `${hostId}'s dispatch of ${queue}: ${event.type}`)
        this.#dispatches.step(hostId, incarnation, queue, event, commands, this.#clock.now() - epochMs, dispatch)
      },
      onQueueStep: (incarnation, queue) => {
        this.#watchdog.step(() => `${hostId}'s Matching queue ${queue.queue}`)
        this.#idlePolls.step(hostId, incarnation, queue, this.#clock.now() - epochMs)
      },
      onDueSignal: (id, queue, dueMs, at) => (at === 'sent' ? this.#giveBacks.sent(id, queue, dueMs, this.#clock.now()) : this.#giveBacks.reached(id, queue, dueMs)),
      ...(config.mutant?.wrapBus === undefined ? {} : { wrapBus: config.mutant.wrapBus }),
      ...(config.mutant?.wrapEngineJobStore === undefined ? {} : { wrapEngineJobStore: config.mutant.wrapEngineJobStore }),
      ...(config.mutant?.dispatchMachine === undefined ? {} : { dispatchMachine: config.mutant.dispatchMachine }),
      ...(config.mutant?.matchingWaitingPolls === undefined ? {} : { matchingWaitingPolls: config.mutant.matchingWaitingPolls }),
      recordStore: (record) => this.#observeStore(record),
      recordJobs: (record) => this.#observeJobs(record),
      queueOf: (id) => this.#checkers.queueOf(id),
      onView: (id, hosts) => {
        this.#log(`view ${id}: ${hosts.join(',') || 'nobody'}`)
        // A view that changes after the heal (a heartbeat stamped before a pause landing late
        // lets a row lapse once more) moves partitions: prompt delivery is judged again from
        // as long after it as after the heal. A move's own views are judged by its window (MembershipMoves.ts).
        if (Number.isFinite(this.#promptFromMs) && !this.#moves.moving()) this.#promptFromMs = Math.max(this.#promptFromMs, this.#clock.now() + promptJudgedAfterMs)
        config.onEvent?.({ kind: 'view', hostId: id, hosts }, this.#clock.now())
      },
      onDefect: (id, where, defect) => this.#checkers.fail('other', `defect on ${id} in ${where}: ${defect instanceof Error ? defect.stack : String(defect)}`),
    })
  }

  /** Runs both phases, closes every engine, and audits every job. */
  async run(): Promise<JobsRunResult> {
    const loop = this.#loop
    const livenessSteps = await loop.run(this.#workload())
    this.#controls.finish(this.#clock.now())
    this.#giveBacks.finish()
    await this.#bus.close()
    // Stopped early by a violation, the final phase left live jobs behind it: expected, not stranded.
    const jobs = this.#checkers.audit(await this.#finalRows(), this.#finalPhaseRan && !this.#failed(), this.#clock.now())
    for (const violation of this.#matching.violations) this.#checkers.fail('matching', violation)
    const failing = jobCheckerNames.filter((name) => this.#checkers.counts[name] > 0 && !this.#checkers.knownFailingChecker(name))
    return {
      ok: failing.length === 0,
      violations: this.#checkers.violations.filter((violation) => !this.#checkers.knownFailing.has(violation)),
      knownFailing: [...this.#checkers.knownFailing],
      checkers: this.#checkers.counts,
      jobs,
      ownership: this.#ownership.counts(),
      forwarding: { polls: this.#forwarding.polls, routes: [...this.#forwarding.routes].sort(), handOvers: this.#forwarding.handOvers },
      steps: loop.step,
      livenessSteps,
      events: loop.events + loop.ioRuns,
      ioRuns: loop.ioRuns,
      faults: loop.faults,
      simulatedMs: this.#clock.now() - epochMs,
      traceHash: loop.traceHash(),
      trace: loop.traceLines(),
    }
  }

  // What this workload gives the world loop: its faults and clients, in the order they are drawn.
  #workload(): Workload<JobsFaultName> {
    const loop = this.#loop
    const faults = this.#options.faults
    const workers = () => this.#hosts.filter((host) => host.alive && host.role === 'worker')
    return {
      safetySteps: this.#options.steps,
      failed: () => this.#failed(),
      strikes: [
        loop.crashStrike('crash.beforeStore', () => faults['crash.beforeStore'], this.#hosts),
        loop.restartStrike('restart', () => faults.restart * 4, this.#hosts),
        loop.clockJumpStrike('clock.jump', () => faults['clock.jump'], 600_000),
        () =>
          loop.strikeHostFor('membership.cut', faults['membership.cut'], workers().filter((host) => !this.#isCut(host.id)), cutMsMin, cutMsMax, (host, ms) => {
            this.#cutUntilMs.set(host.id, this.#clock.now() + ms)
            return `${host.id} cannot reach the membership table for ${ms} ms`
          }),
        () =>
          loop.strikeHostFor('store.cut', faults['store.cut'], workers().filter((host) => !this.#isStoreCut(host.id)), storeCutMsMin, storeCutMsMax, (host, ms) => {
            this.#storeCutUntilMs.set(host.id, this.#clock.now() + ms)
            return `${host.id} cannot reach the job store for ${ms} ms`
          }),
        () =>
          loop.strikeHostFor('host.pause', faults['host.pause'], workers().filter((host) => !host.paused()), pauseMsMin, pauseMsMax, (host, ms) => {
            host.pause(ms)
            return `${host.id} pauses for ${ms} ms: its timers and I/O wait while the others go on`
          }),
        () => this.#maybeStopWork(),
        () => this.#operatorActs(),
      ],
      actions: [
        loop.ioAction,
        {
          weight: () => 6,
          run: () => {
            if (this.#clients.act()) loop.events++
            else this.#advance()
          },
        },
        loop.advanceAction,
      ],
      // A paused host's calls wait for its pause to end.
      runnableIo: () => this.#runnableIo(),
      interceptIo: (io) => this.#interceptIo(io),
      ioFaultChances: () => ioFaultChancesOf(faults),
      delivered: (io, outcome) => {
        if (outcome.ok) this.#countForwarding(io.hostId, io.label)
        if (outcome.ok && outcome.value === null && io.label.startsWith(heartbeatLabelPrefix)) {
          const [id, claimToken] = io.label.slice(heartbeatLabelPrefix.length).split(' ') as [string, string]
          this.#controls.heartbeatRefused(io.hostId, id, claimToken, this.#clock.now())
        }
      },
      isAlive: (hostId) => this.#hosts.some((host) => host.id === hostId && host.alive),
      crash: (hostId) => {
        const host = this.#hosts.find((candidate) => candidate.id === hostId)
        return host === undefined ? 0 : this.#crash(host)
      },
      liveness: async () => {
        this.#finalPhaseRan = !this.#failed()
        return this.#finalPhaseRan ? await this.#finalPhase() : 0
      },
      startClosing: () => {
        this.#closing = true
        for (const host of this.#hosts) host.resume()
        return [...this.#hosts.filter((host) => host.alive).map((host) => host.mb.close()), ...this.#moves.closing()]
      },
      closeFailed: (unfinished) => this.#checkers.fail('other', `${unfinished} engines never finished closing`),
    }
  }

  #failed(): boolean {
    return this.#checkers.violations.length > this.#checkers.knownFailing.size || this.#matching.violations.length > 0
  }

  // ------------------------------------------------------------ safety phase

  // Indices of the parked calls whose host is not paused.
  #runnableIo(): number[] {
    const paused = new Set(this.#hosts.filter((host) => host.paused()).map((host) => host.id))
    const indices: number[] = []
    this.#gate.pending().forEach((io, index) => {
      if (!this.#heldBack(io) && !paused.has(io.hostId)) indices.push(index)
    })
    return indices
  }

  // Whether `io`, a heartbeat, is held back now: its statement waits on its row's lock, for one
  // to three visibility timeouts of its job's queue, while the host's other calls go on; then it
  // gives up (#interceptIo). Decided once per call, when the world first sees it parked.
  #heldBack(io: PendingIo): boolean {
    if (!io.label.startsWith(heartbeatLabelPrefix)) return false
    const nowMs = this.#clock.now()
    if (io.id > this.#heartbeatsSeenId) {
      this.#heartbeatsSeenId = io.id
      const chance = this.#loop.faultsOn ? this.#options.faults['heartbeat.held'] : 0
      if (!this.#heartbeatHolds.chance(chance)) return false
      const id = io.label.slice(heartbeatLabelPrefix.length).split(' ')[0] as string
      const visibilityMs = (this.#options.queues[this.#checkers.queueOf(id) ?? '']?.visibilityTimeoutS ?? 1) * 1_000
      const ms = this.#heartbeatHolds.int(visibilityMs, 3 * visibilityMs)
      this.#heldUntilMs.set(io.id, nowMs + ms)
      this.#loop.fault('heartbeat.held', `${io.hostId} ${io.label} waits on its row's lock for ${ms} ms; the host's other calls go on`, io.hostId)
    }
    const untilMs = this.#heldUntilMs.get(io.id)
    return untilMs !== undefined && untilMs > nowMs && this.#loop.faultsOn
  }

  #crash(host: JobsHost): number {
    this.#clients.forget(host)
    this.#giveBacks.crashed(host.id)
    this.#controls.crashed(host.id)
    this.#handlers.crashed(host.id, host.incarnation)
    return host.crash()
  }

  #isStoreCut(hostId: string): boolean {
    return (this.#storeCutUntilMs.get(hostId) ?? Number.NEGATIVE_INFINITY) > this.#clock.now()
  }

  #isCut(hostId: string): boolean {
    return (this.#cutUntilMs.get(hostId) ?? Number.NEGATIVE_INFINITY) > this.#clock.now()
  }

  // Refuses a taken call of a host cut off from what it calls, and strikes bus messages (lost,
  // late) while faults are on; true when it settled the call.
  #interceptIo(io: PendingIo): boolean {
    const operation = io.label.split(' ')[0] as string
    // A held heartbeat runs once its hold ended, or at the heal: it gave up waiting for the lock.
    if (this.#heldUntilMs.delete(io.id)) {
      this.#log(`${io.hostId} ${io.label} gave up waiting for its row's lock`)
      io.reject(new Unavailable({ operation, detail: 'lock wait timed out', maybeCommitted: false }))
      return true
    }
    if (io.label.startsWith(membershipLabelPrefix) && this.#isCut(io.hostId)) {
      this.#log(`${io.hostId} ${io.label} cannot reach the membership table`)
      io.reject(new Unavailable({ operation, detail: 'cut off from the membership table', maybeCommitted: false }))
      return true
    }
    if (io.label.startsWith(jobLabelPrefix) && this.#isStoreCut(io.hostId)) {
      this.#log(`${io.hostId} ${io.label} cannot reach the job store`)
      io.reject(new Unavailable({ operation, detail: 'cut off from the job store', maybeCommitted: false }))
      return true
    }
    if (!this.#loop.faultsOn || !io.label.startsWith(busLabelPrefix)) return false
    // NOTIFY gives no receipt: the sender hears success either way. Per message, the drawn
    // chances are scaled up (bus steps are a small share of all I/O; hand-overs a smaller one
    // still), so a seed with the fault on loses hand-overs, not only due signals.
    const faults = this.#options.faults
    if (this.#decide.chance(faults['bus.drop'] * busFaultScale)) {
      this.#loop.fault('bus.drop', `${io.hostId} ${io.label} is lost in transit`, io.hostId)
      const due = /^(?:late )?bus\.due (\S+)$/.exec(io.label)
      if (due !== null) this.#giveBacks.lost(io.hostId, due[1] as string)
      io.resolve(undefined)
      return true
    }
    if (this.#decide.chance(faults['bus.delay'] * busFaultScale)) {
      this.#loop.fault('bus.delay', `${io.hostId} ${io.label} is held back; it arrives after later steps`, io.hostId)
      io.resolve(undefined)
      this.#gate.park(io.hostId, `late ${io.label}`, false, io.run).catch(() => {})
      return true
    }
    return false
  }

  #countForwarding(hostId: string, label: string): void {
    const sent = /^(?:late )?bus\.send →(\S+) (poll|claimed) /.exec(label)
    if (sent === null) return
    const poll = /^(?:late )?bus\.send →(\S+) poll (\S+) wait (\d+)/.exec(label)
    if (poll !== null) this.#moves.pollSent(poll[1] as string, poll[2] as string, Number(poll[3]))
    if (sent[2] === 'claimed') this.#forwarding.handOvers++
    else {
      this.#forwarding.polls++
      this.#forwarding.routes.add(`${hostId}→${sent[1]}`)
    }
  }

  #advance(): void {
    this.#loop.advance()
  }

  // ------------------------------------------------------------ final phase and close

  async #finalPhase(): Promise<number> {
    this.#loop.faultsOn = false
    this.#cutUntilMs.clear()
    this.#storeCutUntilMs.clear()
    for (const host of this.#hosts) if (!host.alive) host.restart()
    for (const host of this.#hosts) host.resume()
    this.#log('HEAL: every host up, faults off; membership settles; clients ack what they hold, the work loops deliver the rest, time moves timer by timer')
    this.#config.onEvent?.({ kind: 'heal' }, this.#clock.now())
    this.#handlers.healed(this.#clock.now())
    this.#checkers.healed(this.#clock.now())
    let steps = await this.#settleMembership()
    // Every queue an operator paused is resumed, once every call issued before the heal ran.
    if (this.#everPaused.size > 0) {
      for (const queue of [...this.#everPaused].sort()) this.#clients.control(this.#hosts[0] as JobsHost, queue, false)
      this.#pausedByOperator.clear()
      steps += await this.#runAllIo()
    }
    this.#promptFromMs = this.#clock.now() + promptJudgedAfterMs
    if (this.#wavesLeft > 0) this.#nextWaveMs = this.#promptFromMs + this.#wave.int(waveQuietMsMin, waveQuietMsMax)
    this.#moves.healed(this.#promptFromMs)
    this.#lastClaimMs = this.#clock.now()
    // The step budget, like the time bound, counts from the last claim: a world still working
    // through a backlog (one loop, long handlers) is not stuck.
    let claimsSeen = this.#claimsCommitted
    let progressStep = steps
    while (steps - progressStep < this.#options.livenessStepsMax && !this.#failed()) {
      if (this.#claimsCommitted !== claimsSeen) {
        claimsSeen = this.#claimsCommitted
        progressStep = steps
      }
      this.#clients.ackAll()
      this.#maybeEnqueueHealed()
      this.#restartHeld()
      this.#maybeWave()
      this.#moveMembership()
      steps += 1 + (await this.#runAllIo())
      this.#judgePrompt()
      // A crashed incarnation's handlers never return (its timers died with it): only live ones count.
      const running = this.#hosts.some((host) => host.alive && Object.keys(this.#options.queues).some((queue) => (this.#busy.get(`${host.id}/${host.incarnation}/${queue}`) ?? 0) > 0))
      const settled = this.#clients.unsettled().length === 0 && !running
      if ((settled && this.#healedLeft === 0 && this.#wavesLeft === 0 && this.#held === null && this.#moves.done() && this.#checkers.liveDeliverable(this.#clock.now()).length === 0) || this.#clock.now() >= this.#lastClaimMs + livenessMsMax) break
      this.#maybeStopWork()
      this.#promptBeforeStep()
      this.#step1()
    }
    if (steps - progressStep >= this.#options.livenessStepsMax) {
      const unsettled = this.#clients.unsettled()
      const live = this.#checkers.liveDeliverable(this.#clock.now())
      this.#checkers.fail('none stranded', `the final phase did not settle within ${this.#options.livenessStepsMax} steps of its last claim; client calls never answered: ${unsettled.slice(0, 5).join(', ') || 'none'}; live jobs left: ${live.slice(0, 5).join(', ') || 'none'}${live.length > 5 ? ` and ${live.length - 5} more` : ''}`)
    }
    for (const queue of Object.keys(this.#options.queues)) this.#clients.sweep(this.#hosts[0] as JobsHost, queue)
    // Then parked I/O runs (and time moves when none is parked) until every client call settled.
    return steps + (await this.#loop.drain(() => this.#clients.unsettled().length === 0 && this.#gate.pending().length === 0, this.#options.livenessStepsMax))
  }

  // One step of time: to the earliest pending timer (firing what is due then), never past it.
  #step1(): void {
    const now = this.#clock.now()
    const next = this.#clock.nextDueMs()
    // Never past the next wave's moment or a held wave's restart, so that they come when drawn.
    const moments = [this.#nextWaveMs, ...(this.#held?.loops.map((loop) => loop.untilMs) ?? []), ...this.#moves.moments()].filter((ms) => ms > now)
    const target = Math.min(next === undefined ? now + idleStepMs : Math.max(now, Math.min(next, now + idleStepMs)), ...moments)
    if (target > now) this.#log(`time +${target - now}`)
    this.#clock.advanceTo(target)
    this.#handlers.tick(this.#clock.now())
  }

  // Runs every parked call (in the world's order) until none is parked; time stands still.
  #runAllIo(): Promise<number> {
    return this.#loop.drain(() => this.#gate.pending().length === 0, this.#options.livenessStepsMax)
  }

  // Runs I/O and heartbeat rounds until every live host's view shows exactly the live workers.
  async #settleMembership(): Promise<number> {
    const workers = this.#hosts.filter((host) => host.alive && host.role === 'worker').map((host) => host.id).sort().join(',')
    let steps = 0
    for (let round = 0; round < settleRoundsMax; round++) {
      steps += await this.#runAllIo()
      if (this.#hosts.every((host) => !host.alive || host.view().join(',') === workers)) return steps
      this.#log(`settle: up to +${membershipHeartbeatIntervalMs}, timer by timer`)
      const untilMs = this.#clock.now() + membershipHeartbeatIntervalMs
      while (this.#clock.now() < untilMs && steps < this.#options.livenessStepsMax) {
        const next = this.#clock.nextDueMs()
        this.#clock.advanceTo(next === undefined || next > untilMs ? untilMs : Math.max(this.#clock.now(), next))
        this.#handlers.tick(this.#clock.now())
        steps += 1 + (await this.#runAllIo())
      }
    }
    return steps
  }

  // Prompt delivery at this instant (see the header): the jobs due now, then those seen waiting at
  // the last judgement that are not due any more.
  #judgePrompt(): void {
    const now = this.#clock.now()
    const waited = this.#promptWaiting
    this.#promptWaiting = []
    if (now < Math.max(this.#promptFromMs, this.#moves.judgedFromMs())) return
    for (const queue of Object.keys(this.#options.queues)) {
      const idle = this.#isIdle(queue)
      if (!idle) this.#idleSince.delete(queue)
      else if (!this.#idleSince.has(queue)) this.#idleSince.set(queue, now)
    }
    for (const due of this.#checkers.dueJobs(now)) {
      const idleSince = this.#idleSince.get(due.queue)
      // A rate-limited queue's jobs wait for tokens: how soon they start is the rate's, not judged here.
      if (idleSince === undefined || this.#isRated(due.queue)) continue
      const fromMs = this.#promptFrom(due.queue, Math.max(due.dueSinceMs, idleSince))
      const told = `${due.id}@${due.dueSinceMs}`
      if (this.#promptTold.has(told)) continue
      this.#promptWaiting.push({ id: due.id, queue: due.queue, dueSinceMs: due.dueSinceMs, idleSince, fromMs, told })
      if (now - fromMs <= promptDeliveryBoundMs) continue
      this.#promptTold.add(told)
      this.#checkers.fail('prompt delivery', `job ${due.id} of ${due.queue}, due since ${due.dueSinceMs - epochMs}, still waits at ${now - epochMs} though a worker has been idle on its queue since ${idleSince - epochMs} (bound ${promptDeliveryBoundMs} ms)`)
    }
    // Nothing changes between two steps of time, so each job seen waiting at the last judgement
    // (its queue still idle when time moved) waited on until this instant: one that started (or
    // stopped being due) only now, past the bound, was as late as one still waiting.
    for (const wait of waited) {
      const fromMs = this.#promptFrom(wait.queue, wait.fromMs)
      if (now - fromMs <= promptDeliveryBoundMs || this.#promptTold.has(wait.told)) continue
      this.#promptTold.add(wait.told)
      this.#checkers.fail('prompt delivery', `job ${wait.id} of ${wait.queue}, due since ${wait.dueSinceMs - epochMs}, waited until ${now - epochMs} though a worker had been idle on its queue since ${wait.idleSince - epochMs} (bound ${promptDeliveryBoundMs} ms)`)
    }
  }

  // Just before time moves: the jobs seen waiting go on waiting only on queues a worker still idles on
  // (the world may have stopped loops since the judgement).
  #promptBeforeStep(): void {
    this.#promptWaiting = this.#promptWaiting.filter((wait) => this.#isIdle(wait.queue))
  }

  // When a due job's wait counts from, given when it and its queue's idle worker met: never before
  // prompt delivery is judged, nor inside a membership move's window, nor before its queue is
  // judged again after a partition lost its range.
  #promptFrom(queue: string, metMs: number): number {
    return Math.max(metMs, this.#promptFromMs, this.#moves.judgedFromMs(queue), this.#promptFromOfQueue.get(queue) ?? Number.NEGATIVE_INFINITY)
  }

  // A membership move's step (MembershipMoves.ts); a range its loser still owns once the views
  // agreed holds its queue's judgement back as any other loss does.
  #moveMembership(): void {
    for (const loss of this.#moves.step()) this.#judgeAfterLoss(loss.family, loss.atMs)
  }

  // `family`'s partition found its range taken (or failed to acquire) at `atMs`: see `promptJudgedAfterLossMs`.
  #judgeAfterLoss(family: string, atMs: number): void {
    this.#promptFromOfQueue.set(family, Math.max(this.#promptFromOfQueue.get(family) ?? 0, atMs + promptJudgedAfterLossMs))
  }

  // True when some live worker's loops on `queue` have a free handler.
  #isIdle(queue: string): boolean {
    return this.#hosts.some((host) => host.alive && host.role === 'worker' && host.working(queue) && (this.#busy.get(`${host.id}/${host.incarnation}/${queue}`) ?? 0) < this.#options.workLoops)
  }

  #isRated(queue: string): boolean {
    const options = this.#options.queues[queue]
    return options?.rateLimit !== undefined || options?.rateLimitPerKey !== undefined
  }

  // With its chance, drawn on its own stream, one of the enqueues producers make after the heal, on any live host.
  #maybeEnqueueHealed(): void {
    if (this.#healedLeft === 0 || !this.#healedProducer.chance(healedEnqueueChance)) return
    const alive = this.#hosts.filter((host) => host.alive)
    if (alive.length === 0) return
    this.#healedLeft--
    this.#clients.enqueue(this.#healedProducer.pick(alive), this.#healedProducer)
  }

  // The next wave after the heal, once its quiet spell has passed, through any live host.
  #maybeWave(): void {
    if (this.#wavesLeft === 0 || this.#clock.now() < this.#nextWaveMs) return
    const alive = this.#hosts.filter((host) => host.alive)
    if (alive.length === 0) return
    this.#wavesLeft--
    this.#nextWaveMs = this.#wavesLeft === 0 ? Number.POSITIVE_INFINITY : this.#clock.now() + this.#wave.int(waveQuietMsMin, waveQuietMsMax)
    // Half the time on a queue limited per key, when the seed has one.
    const queues = Object.keys(this.#options.queues)
    const limited = queues.filter((name) => this.#options.queues[name]?.concurrencyPerKey !== undefined)
    const queue = this.#wave.pick(limited.length > 0 && this.#wave.chance(0.5) ? limited : queues)
    if (this.#held === null && this.#wave.chance(0.5)) this.#holdWork(queue)
    const host = this.#wave.pick(alive)
    if (this.#options.keyedWaves === 0 || !this.#keyedWave.chance(this.#options.keyedWaves)) return this.#clients.enqueueWave(host, queue, this.#wave)
    // A keyed wave's own jobs come from a handler, as a follow-up of the job it runs under that
    // job's key, when one with a key runs (then through its host, whose other loops may wait in
    // line); else from a worker, under the key of the job the last keyed wave scheduled, if any.
    const holder = this.#runningKeyed(queue)
    const workers = alive.filter((candidate) => candidate.role === 'worker')
    const through = holder?.host ?? (workers.length > 0 ? this.#keyedWave.pick(workers) : host)
    const heldKey = holder?.key ?? this.#scheduledKeys.get(queue)
    if (heldKey !== undefined) this.#clients.enqueueKeyed(through, queue, heldKey, false)
    this.#clients.enqueueWave(host, queue, this.#wave)
    const laterKey = `wave-later-${this.#keyedWaves++}`
    this.#scheduledKeys.set(queue, laterKey)
    this.#clients.enqueueKeyed(through, queue, laterKey, true)
  }

  // A job of `queue` with a job key that a live host's handler runs now, and that host, if any (drawn on the keyed waves' stream).
  #runningKeyed(queue: string): { readonly host: JobsHost; readonly key: string } | null {
    const running = this.#controls.running().flatMap((event) => {
      const host = this.#hosts.find((candidate) => candidate.id === event.hostId && candidate.alive && candidate.incarnation === event.incarnation)
      const key = this.#clients.keyOf(event.id)
      return event.queue === queue && host !== undefined && key !== undefined ? [{ host, key }] : []
    })
    return running.length === 0 ? null : this.#keyedWave.pick(running.sort((a, b) => (a.host.id + a.key).localeCompare(b.host.id + b.key)))
  }

  // A held wave: every live worker's loops on `queue` are stopped as it lands (a rolling deploy),
  // and each worker's start again a moment later, all its loops at once, with the wave's jobs due
  // and no due signal to come.
  #holdWork(queue: string): void {
    const now = this.#clock.now()
    const held = { queue, loops: [] as HeldLoops[] }
    for (const host of this.#hosts.filter((candidate) => candidate.alive && candidate.role === 'worker' && candidate.working(queue))) {
      const loop = { host, incarnation: host.incarnation, untilMs: now + this.#wave.int(waveHoldMsMin, waveHoldMsMax), resolved: false }
      held.loops.push(loop)
      this.#log(`hold → ${host.id} work on ${queue}`)
      this.#handlers.stopCalled(host.id, now)
      this.#config.mutant?.onWorkStopped?.(host.id, true)
      host.stopWork(queue).then(
        () => {
          if (host.incarnation !== loop.incarnation) return
          loop.resolved = true
          this.#handlers.stopResolved(host.id, loop.incarnation, queue, this.#clock.now())
        },
        (error: unknown) => this.#checkers.fail('other', `stop() of ${host.id}'s loops on ${queue} failed: ${String(error)}`),
      )
    }
    this.#held = held
  }

  // Starts again every worker's loops a held wave stopped whose moment passed and whose stop() resolved.
  #restartHeld(): void {
    const held = this.#held
    if (held === null) return
    const now = this.#clock.now()
    // Loops of an incarnation that died are gone with it; the others wait for their moment and stop().
    const waiting = held.loops.filter((loop) => loop.host.incarnation === loop.incarnation && !(loop.resolved && now >= loop.untilMs))
    for (const loop of held.loops) {
      if (loop.host.incarnation !== loop.incarnation || waiting.includes(loop)) continue
      this.#log(`held ${loop.host.id} work on ${held.queue} starts again`)
      this.#config.mutant?.onWorkStopped?.(loop.host.id, false)
      loop.host.startWork(held.queue)
    }
    this.#held = waiting.length === 0 ? null : { queue: held.queue, loops: waiting }
  }

  // With the seed's chance, one worker's loops on one queue get `stop()`, and start again once it resolves.
  #maybeStopWork(): boolean {
    const queues = Object.keys(this.#options.queues)
    if (this.#options.stopChance === 0 || !this.#decide.chance(this.#options.stopChance)) return false
    const candidates = this.#hosts.flatMap((host) => (host.alive && host.role === 'worker' ? queues.filter((queue) => host.working(queue)).map((queue) => ({ host, queue })) : []))
    if (candidates.length === 0) return false
    const { host, queue } = this.#decide.pick(candidates)
    const incarnation = host.incarnation
    this.#log(`stop → ${host.id} work on ${queue}`)
    this.#handlers.stopCalled(host.id, this.#clock.now())
    this.#config.mutant?.onWorkStopped?.(host.id, true)
    host.stopWork(queue).then(
      () => {
        // Once the engines close, loops stopped by the world stay stopped (`work` refuses then).
        if (host.incarnation !== incarnation || this.#closing) return
        this.#log(`stopped ${host.id} work on ${queue}; it starts again`)
        this.#handlers.stopResolved(host.id, incarnation, queue, this.#clock.now())
        this.#config.mutant?.onWorkStopped?.(host.id, false)
        host.startWork(queue)
      },
      (error: unknown) => this.#checkers.fail('other', `stop() of ${host.id}'s loops on ${queue} failed: ${String(error)}`),
    )
    return true
  }

  #controlsOn(): boolean {
    return this.#options.control.pauseChance > 0 || this.#options.control.cancelRunningChance > 0
  }

  // With the seed's chances, drawn on the operators' stream: an operator pauses a queue (or
  // resumes one it paused), or cancels a job a live handler is running. True when one acted.
  #operatorActs(): boolean {
    if (!this.#controlsOn()) return false
    const { pauseChance, cancelRunningChance } = this.#options.control
    const operator = this.#operator
    const alive = this.#hosts.filter((host) => host.alive)
    if (alive.length === 0) return false
    if (operator.chance(pauseChance)) {
      const queue = operator.pick(Object.keys(this.#options.queues))
      const pause = !this.#pausedByOperator.has(queue)
      if (pause) this.#pausedByOperator.add(queue)
      else this.#pausedByOperator.delete(queue)
      this.#everPaused.add(queue)
      this.#clients.control(operator.pick(alive), queue, pause)
      return true
    }
    if (!operator.chance(cancelRunningChance)) return false
    const running = this.#controls.running().filter((event) => this.#hosts.some((host) => host.id === event.hostId && host.alive && host.incarnation === event.incarnation))
    if (running.length === 0) return false
    const target = operator.pick(running)
    this.#clients.cancelRunning(operator.pick(alive), target.queue, target.id)
    return true
  }

  // A claim of `hostId`'s incarnation was answered job `id` of `queue`: no job ahead of it may be
  // kept there (DispatchChecker.ts). Judged on queues of one partition, where the order holds across the queue.
  #answered(hostId: string, incarnation: number, queue: string, id: string): void {
    if ((this.#options.queues[queue]?.partitions ?? 1) !== 1) return
    this.#dispatches.answered(hostId, incarnation, queue, id, this.#clock.now() - epochMs)
  }

  #onHandler(event: HandlerEvent): void {
    const key = `${event.hostId}/${event.incarnation}/${event.queue}`
    this.#busy.set(key, (this.#busy.get(key) ?? 0) + (event.started ? 1 : -1))
    this.#log(`handler ${event.started ? 'starts' : 'returns'} ${event.id} (${event.claimToken}) on ${event.hostId}`)
    this.#handlers.handler(event, this.#clock.now())
    // A loop without a local queue starts a handler in the instant its claim is answered.
    if (event.started && !event.batched) this.#answered(event.hostId, event.incarnation, event.queue, event.id)
    this.#controls.handler(event, this.#clock.now())
    this.#config.onEvent?.({ kind: 'handler', hostId: event.hostId, jobId: event.id, claimToken: event.claimToken, started: event.started }, this.#clock.now())
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
      if (record.outcome.kind === 'claimed') {
        this.#lastClaimMs = this.#clock.now()
        this.#claimsCommitted++
      }
      this.#handled.started.set(record.id, (this.#handled.started.get(record.id) ?? 0) + 1)
      const violation = this.#ownership.observe(record)
      // A host whose own view shows nobody at all (its own row lapsed too) is judged apart: a known
      // failure of the current engine (KnownEngineFailures.ts), unlike any other non-owner's claim.
      if (violation !== null) this.#checkers.fail(record.ownership?.seesNobody === true ? 'owner sees nobody' : 'owner delivers', violation)
    }
    this.#claimOrder.observe(record)
    this.#checkers.observe(record)
    this.#rates.observe(record)
    this.#fairness.observe(record)
    this.#fences.observeJobs(record)
    this.#controls.observe(record)
    this.#handlers.observe(record)
    this.#giveBacks.observe(record, this.#clock.now())
    this.#config.onJobs?.(record, this.#clock.now())
  }

  #observeStore(record: BoundaryRecord): void {
    if (record.op === 'answered' && record.afterUnload !== true && (record.lostQueue !== null || (record.call === 'acquire' && record.answer !== 'ok'))) {
      const key = decodeQueueKey(record.queue)
      if (key.namespace === jobsNamespace && this.#moves.lost(record.caller.hostId, key.family, key.partition, this.#clock.now())) this.#judgeAfterLoss(key.family, this.#clock.now())
    }
    if (record.op === 'checkpoint') {
      const now = this.#clock.now()
      for (const id of this.#checkers.jobIds()) {
        const expiresAtMs = this.#checkers.expiresAtOf(id)
        if (expiresAtMs !== null && expiresAtMs <= now) this.#handled.obsolete.add(id)
      }
    }
    this.#fences.observeStore(record)
    this.#matching.observe(record, this.#clock.now())
  }

  #log(line: string): void {
    this.#loop.log(line)
  }
}
