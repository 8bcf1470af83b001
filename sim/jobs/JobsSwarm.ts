/**
 * JobsSwarm — every option of one end-to-end (Jobs) run, drawn from its seed: how many hosts
 * and queues, the queues' stamps (short visibility timeouts and small budgets, so claims lapse
 * and budgets run out within a run), what clients do and how often, and which faults strike
 * (swarm testing, as Swarm.ts draws them for the Matching world).
 *
 * The hosts form one group of engines on the shared database (DESIGN.md §6): each is a worker
 * (a member of dynamic membership, owning the partitions it is given) or a producer (an observer
 * that owns nothing; its clients only enqueue); host-1 is always a worker. Each queue has 1 to 4
 * Matching partitions, and a seed may send most claims to workers that own none of the queue's
 * partitions, so polls are forwarded to the owner and hand-overs come back over the bus.
 *
 * A seed may also give the shared memory store row-lock windows (`rowLockChance`, SimRowLocks.ts):
 * head statements in flight side by side, the later skipping the rows the earlier holds.
 * And it may make each leave after the heal race a hand-over to the leaving engine (`leaveRaces`,
 * MembershipMoves.ts).
 *
 * Does not: draw anything at run time (Decisions.ts does), or include faults the job engine does
 * not claim to survive.
 */
import { Random } from '../../src/kernel/Random.ts'
import { describeFaults, drawFaultChances } from '../core/FaultChances.ts'
import type { SimRateLimit } from './RateChecker.ts'

/**
 * The faults the end-to-end world injects: the Matching world's crashes, restarts, clock jumps
 * and store faults, plus the group's: a bus message lost (`bus.drop`) or delivered late, after
 * other steps (`bus.delay`), and a worker cut off from the membership table for a while
 * (`membership.cut`: its row lapses, the others take its partitions, it sees nobody), and a
 * worker's stop-the-world pause (`host.pause`: its timers and I/O wait while the others go on,
 * so its handlers outlive their claims and their acks come back after the job was taken again),
 * and a worker cut off from the job store for a while (`store.cut`: its heartbeats fail, the
 * claims of its running handlers lapse, and its other loops may claim those jobs again once it is
 * back, while the first handler still runs), and a heartbeat held back (`heartbeat.held`: its
 * statement waits on its row's lock for one to three visibility timeouts, then gives up, while
 * the worker's other statements go on; only in the worlds of `heldHeartbeats`).
 */
export const jobsFaultNames = ['crash.beforeStore', 'crash.afterCommit', 'restart', 'clock.jump', 'store.unavailable', 'store.maybeCommitted', 'store.latency', 'bus.drop', 'bus.delay', 'membership.cut', 'host.pause', 'store.cut', 'heartbeat.held'] as const

// Drawn after the work loops' options, so that adding them kept every earlier option of a seed.
const lateFaults: ReadonlyArray<JobsFaultName> = ['host.pause', 'store.cut']

// Chance that a heartbeat of a `heldHeartbeats` world is held back: often enough that long
// handlers lose their claims, seldom enough that the loop which claims such a job again keeps its
// own claim, which the first handler's ack then meets (0.16 and 0.8 gave fewer such acks).
const heldHeartbeatChance = 0.4
// Share of seeds that run a `heldHeartbeats` world.
const heldHeartbeatsWorldChance = 0.25
// Share of seeds whose engines hand jobs over at enqueue across engines, and the mask of the
// stream that draws it (its own: drawing it moves no other option).
const handOversChance = 0.5
const handOversSeedMask = 0x4a0d
// Share of seeds with row-lock windows (memory only), the chances a world draws among, and the
// mask of the stream that draws them (its own: drawing them moves no other option).
const rowLocksWorldChance = 0.5
const rowLockChances: ReadonlyArray<number> = [0.3, 0.6, 1]
const rowLocksSeedMask = 0x2f17
// Share of seeds whose leaves after the heal race a hand-over to the leaving engine, and the mask
// of the stream that draws it (its own: drawing it moves no other option).
const leaveRacesChance = 0.5
const leaveRacesSeedMask = 0x6b21

/** One end-to-end fault's name. */
export type JobsFaultName = (typeof jobsFaultNames)[number]

/** What a worker does with a claimed job, by relative weight. */
export interface HandleActionWeights {
  readonly ack: number
  readonly heartbeat: number
  readonly retry: number
  readonly fail: number
  /** Forgets the handle: the claim lapses. */
  readonly drop: number
  /** Waits until the deadline has passed, then acks (must be refused). */
  readonly late: number
}

/** The stamps of one queue handle, in seconds as the public API takes them. */
export interface SimQueueOptions {
  readonly visibilityTimeoutS: number
  readonly maxAttempts: number
  readonly backoffBaseS: number
  /** Matching partitions of the queue (1 keeps the strict claim order). */
  readonly partitions: number
  /** At most this many of the queue's jobs with one concurrency key processing at once (absent: no limit). */
  readonly concurrencyPerKey?: number
  /** Fairness weights the handle gives named keys, over the weight an enqueue names. */
  readonly fairnessWeights?: Readonly<Record<string, number>>
  /** Jobs of the queue started per second, across engines (absent: no limit). */
  readonly rateLimit?: SimRateLimit
  /** Jobs of one fairness key started per second (absent: no limit). */
  readonly rateLimitPerKey?: SimRateLimit
}

/** A host's part in the group: a worker joins membership and delivers; a producer only enqueues. */
export type HostRole = 'worker' | 'producer'

/** Every option of an end-to-end run. */
export interface JobsSwarmOptions {
  readonly seed: number
  readonly hosts: number
  /** Each host's role, `host-1` first (always a worker). */
  readonly roles: ReadonlyArray<HostRole>
  /** Probability that a claim goes to a worker owning none of the queue's partitions (forwarded), when there is one. */
  readonly claimElsewhere: number
  /** Queue name → the options every host opens it with. */
  readonly queues: Readonly<Record<string, SimQueueOptions>>
  /** Safety-phase steps (with faults). */
  readonly steps: number
  /**
   * Final-phase step budget before a run is declared stuck. Idle `work` loops of engines that own
   * no partition forward a poll about every second, two bus messages each, through the final
   * phase's ~400 s of waiting: a busy world spends ~20,000 steps on that alone.
   */
  readonly livenessStepsMax: number
  readonly faults: Readonly<Record<JobsFaultName, number>>
  /** Relative weights of client actions. */
  readonly weights: { readonly enqueue: number; readonly claim: number; readonly act: number; readonly cancel: number; readonly ackBatch: number; readonly getJob: number; readonly sweep: number }
  readonly actions: HandleActionWeights
  /** Probabilities that an enqueue carries each option. */
  readonly enqueueChances: { readonly priority: number; readonly runAt: number; readonly expiresAt: number; readonly maxAttempts: number }
  /** The concurrency of the `work` loops every worker host runs on every queue. */
  readonly workLoops: number
  /** The loops' `batch` (claims ahead into a local queue), or null for none. */
  readonly workBatch: number | null
  /**
   * Longest virtual time a handler of each queue runs (each run draws 0…this). Without `batch`
   * up to three visibility timeouts, so heartbeats fire and must keep the claim; with it short
   * enough that a job waiting in the local queue behind `batch` others stays well inside its
   * visibility timeout, as the `batch` option asks of its users.
   */
  readonly handlerMsMax: Readonly<Record<string, number>>
  /** Chance, per world step, that one worker's loops on one queue are stopped (and later started again). */
  readonly stopChance: number
  /**
   * The operator's controls, drawn from a stream of their own at run time so that a seed with
   * both chances 0 runs the world it ran before they existed: per safety step, the chance that
   * an operator pauses (or resumes) a queue, and that one cancels a job a work loop's handler is
   * running; and whether handlers honour `job.signal` (return as soon as it aborts; only where a
   * control is on, for the same reason).
   */
  readonly control: { readonly pauseChance: number; readonly cancelRunningChance: number; readonly honourSignal: boolean }
  /**
   * Per-key flow control, drawn after everything else for the same reason: the chance that an
   * enqueue names a concurrency key (which limits it on a queue with `concurrencyPerKey`), and
   * that an enqueue (single or one job of a batch) names a fairness key (with a weight of its own at half that chance).
   * Keys are tenant names drawn from a few, so that keys repeat while their jobs run.
   */
  readonly keyChances: { readonly concurrencyKey: number; readonly fairnessKey: number }
  /**
   * How many enqueues producers still make once the faults healed (0 when the run asks for none,
   * `enqueueAfterHeal: false`), at moments of the final phase drawn on a stream of their own (so a
   * seed with 0 runs the world it ran before they existed):
   * jobs that arrive while workers wait idle, so prompt delivery judges the enqueue's own path
   * (a job handed to a waiting claim, a key already held, a producer on another engine).
   */
  readonly healedEnqueues: number
  /**
   * A world whose only fault is a held heartbeat (`heartbeat.held`, per heartbeat with its
   * chance), drawn after everything else (a seed without it runs the world it ran before): no
   * operators, four `work` loops per queue without `batch`, handlers of up to three visibility
   * timeouts that honour `job.signal`. A handler whose heartbeat is held past its deadline
   * outlives its claim while its engine goes on serving, so the job is claimed again — often by
   * a sibling loop — while the first handler still runs, and that handler's ack then travels on
   * its loop's next claim (`ackAndClaimDue`). An ack rides only while the engine's due-time
   * passes are quiet, and with the other faults on a pass is in flight at nearly every moment a
   * handler returns.
   */
  readonly heldHeartbeats: boolean
  /**
   * Waves of enqueues once the faults healed (0 when the run asks for no enqueues after the heal,
   * `enqueueAfterHeal: false`): each comes after a quiet spell of a few seconds in which only
   * timers run, and enqueues several jobs of one queue at one instant through one host — a head
   * of one tenant's jobs (its concurrency key on a queue limited per key), then other tenants' and
   * unkeyed jobs — due at once or together a moment later. What a wave holds and when it comes
   * are drawn at run time on a stream of their own (so a seed with 0 runs the world it ran
   * before they existed): a backlog that lands while every engine's workers wait idle, on
   * whichever partitions and owners the queue has — or, for half the waves, while every worker's
   * loops on the queue are stopped, each worker's starting again at a moment of its own, all its
   * loops at once (a rolling deploy).
   */
  readonly healedWaves: number
  /**
   * Membership moves once the faults healed (0 when the run asks for no enqueues after the heal,
   * `enqueueAfterHeal: false`): each comes after a quiet spell in which only timers run, while the
   * workers wait idle, and either a worker engine leaves the group gracefully (its `close()`: its
   * partitions go to the others) or an engine joins it (one that left comes back, or a new
   * worker process starts) and takes its rendezvous share of the partitions from their owners,
   * its `work` loops starting a moment after it joined (a rolling deploy). Jobs of one queue
   * arrive in the seconds after each move, through any live engine. What a move does and when
   * are drawn at run time on a stream of their own (so a seed with 0 runs the world it ran
   * before they existed).
   */
  readonly membershipMoves: number
  /**
   * Claims parked in a queue's line register as waiters, and an enqueue on an engine that does
   * not deliver the queue alone hands its job to one (the hand-over at enqueue across engines,
   * src/jobs/HandOvers.ts), as on PostgreSQL. Drawn on a stream of its own, so a seed draws every
   * other option as it did before it existed.
   */
  readonly handOvers: boolean
  /**
   * The chance that a wave after the heal is keyed, drawn after everything else (a seed with 0
   * runs the world it ran before), each wave's draw made at run time on a stream of its own
   * (JobsWorld.ts): the wave as drawn, with a job due now ahead of it whose job key (`key`) a live
   * job holds — a follow-up a handler enqueues under the key of the job it runs, through that
   * handler's host, when a job with a key runs; else, through a worker, under the key of the job
   * the last keyed wave scheduled — and behind it one scheduled for later under a key of its own.
   * An enqueue answered by its key's holder on an engine whose idle worker's claim eager dispatch
   * set aside for it, with the wave's jobs right behind, is what such a wave brings.
   */
  readonly keyedWaves: number
  /**
   * Row-lock windows (SimRowLocks.ts), on the memory store only: the chance that a head statement
   * (`claimDue`, `ackAndClaimDue`, `takeDue`) parked while another runs started first and holds
   * the rows it locks, so the one running skips them (`FOR UPDATE SKIP LOCKED`) and may answer
   * short while claimable rows exist; 0: none. Drawn on a stream of its own, and its run-time
   * choices on another (JobsWorld.ts), so a seed with 0 runs the world it ran before they existed.
   */
  readonly rowLockChance: number
  /**
   * Each leave after the heal (`membershipMoves`) races a hand-over to the leaving engine: in the
   * instant its `close()` begins, a job due now is being enqueued — through the leaver itself, to a
   * queue it owns with its workers idle in line (eager dispatch inserts it claimed for one of them),
   * or through another engine, whose enqueue may hand it to a waiter of the leaver's (`handOvers`),
   * the `handed` message in flight. Drawn on a stream of its own, and what each race does on another
   * (MembershipMoves.ts), so a seed without it runs the world it ran before it existed.
   */
  readonly leaveRaces: boolean
}

/** The tenants whose names the world's jobs carry as concurrency and fairness keys. */
export const simTenants: ReadonlyArray<string> = ['tenant-a', 'tenant-b', 'tenant-c']

/** Overrides a caller may pin (CLI flags); everything else comes from the seed. */
export interface JobsSwarmOverrides {
  readonly hosts?: number
  readonly steps?: number
  readonly faultsOff?: boolean
  /**
   * False: producers stop enqueueing at the heal (`healedEnqueues` 0), so the final phase only
   * delivers what the safety phase left; by default they go on (drawn from the seed).
   */
  readonly enqueueAfterHeal?: boolean
  /** Pins how many waves come after the heal (`healedWaves`; 0: none, as in worlds pinned before waves existed). */
  readonly healedWaves?: number
  /** Pins how many membership moves come after the heal (`membershipMoves`; 0: none, as in worlds pinned before moves existed). */
  readonly membershipMoves?: number
  /** Pins the hand-over at enqueue across engines on or off (`handOvers`). */
  readonly handOvers?: boolean
  /** Pins the row-lock windows on (`rowLockChance` as drawn, or a chance of its stream when it drew none) or off (0). */
  readonly rowLocks?: boolean
  /** Pins the races at a leave after the heal on or off (`leaveRaces`). */
  readonly leaveRaces?: boolean
}

/** Draws an end-to-end run's options from its seed. */
export function jobsSwarmOptions(seed: number, overrides: JobsSwarmOverrides = {}): JobsSwarmOptions {
  const random = Random.make(seed ^ 0x10b5)
  const faults = { ...drawFaultChances(random, jobsFaultNames.filter((name) => !lateFaults.includes(name) && name !== 'heartbeat.held'), overrides.faultsOff === true), 'host.pause': 0, 'store.cut': 0, 'heartbeat.held': 0 }
  const queueCount = random.int(1, 2)
  const queues: Record<string, SimQueueOptions> = {}
  for (let q = 0; q < queueCount; q++) {
    // Seconds, not minutes: a few hundred steps of virtual time must see claims lapse.
    queues[`queue-${q}`] = { visibilityTimeoutS: random.pick([1, 2, 5, 30]), maxAttempts: random.int(1, 4), backoffBaseS: random.pick([1, 2, 5]), partitions: random.int(1, 4) }
  }
  const hosts = overrides.hosts ?? random.int(2, 4)
  // Producers are the last hosts; host-1 stays a worker so the group always delivers.
  const producers = random.chance(0.5) ? random.int(1, Math.max(1, hosts - 1)) : 0
  const roles = Array.from({ length: hosts }, (_, i): HostRole => (i === 0 || i < hosts - producers ? 'worker' : 'producer'))
  const options = {
    seed,
    hosts,
    roles,
    claimElsewhere: random.pick([0, 0.5, 0.9]),
    queues,
    steps: overrides.steps ?? 1_000,
    livenessStepsMax: 40_000,
    faults,
    weights: { enqueue: random.int(2, 6), claim: random.int(2, 6), act: random.int(2, 6), cancel: random.pick([0, 1]), ackBatch: random.pick([0, 1]), getJob: random.pick([0, 1, 2]), sweep: random.pick([0, 1]) },
    actions: { ack: random.int(1, 6), heartbeat: random.int(0, 3), retry: random.int(0, 3), fail: random.int(0, 2), drop: random.int(0, 2), late: random.int(0, 2) },
    enqueueChances: { priority: random.pick([0, 0.3, 0.7]), runAt: random.pick([0, 0.2, 0.5]), expiresAt: random.pick([0, 0.1, 0.4]), maxAttempts: random.pick([0, 0.3]) },
  }
  // Drawn last, so that adding them kept every earlier option of a seed.
  const workLoops = random.pick([1, 1, 2, 4])
  const workBatch = random.pick([null, null, 1, 3])
  const handlerMsMax: Record<string, number> = {}
  for (const [name, queue] of Object.entries(queues)) {
    const visibilityMs = queue.visibilityTimeoutS * 1_000
    handlerMsMax[name] = Math.floor(workBatch === null ? visibilityMs * random.pick([0, 0.2, 1.5, 3]) : (visibilityMs * random.pick([0, 0.05, 0.2])) / workBatch)
  }
  const stopChance = random.pick([0, 0.002, 0.01])
  Object.assign(faults, drawFaultChances(random, lateFaults, overrides.faultsOff === true))
  // Drawn after everything else, for the same reason.
  const control = { pauseChance: random.pick([0, 0, 0.005, 0.02]), cancelRunningChance: random.pick([0, 0, 0.01, 0.04]), honourSignal: random.chance(0.5) }
  // Drawn after everything else, for the same reason.
  const keyChances = random.chance(0.5) ? { concurrencyKey: random.pick([0, 0.3, 0.8]), fairnessKey: random.pick([0, 0.3, 0.7]) } : { concurrencyKey: 0, fairnessKey: 0 }
  for (const [name, queue] of Object.entries(queues)) {
    const concurrencyPerKey = keyChances.concurrencyKey > 0 && random.chance(0.8) ? random.int(1, 2) : undefined
    const fairnessWeights = keyChances.fairnessKey > 0 && random.chance(0.5) ? { [simTenants[0] as string]: random.pick([0.25, 4]) } : undefined
    queues[name] = { ...queue, ...(concurrencyPerKey === undefined ? {} : { concurrencyPerKey }), ...(fairnessWeights === undefined ? {} : { fairnessWeights }) }
  }
  // Drawn after everything else, for the same reason: rate limits on some queues of some seeds.
  if (random.chance(0.3)) {
    for (const [name, queue] of Object.entries(queues)) {
      const rate = (): SimRateLimit => ({ perSecond: random.pick([0.5, 2, 10]), burst: random.int(1, 3) })
      const rateLimit = random.chance(0.6) ? rate() : undefined
      const rateLimitPerKey = random.chance(0.5) ? rate() : undefined
      queues[name] = { ...queue, ...(rateLimit === undefined ? {} : { rateLimit }), ...(rateLimitPerKey === undefined ? {} : { rateLimitPerKey }) }
    }
  }
  // Drawn after everything else, for the same reason.
  const drawnHealedEnqueues = random.pick([0, 4, 12, 24])
  const healedEnqueues = overrides.enqueueAfterHeal === false ? 0 : drawnHealedEnqueues
  // Drawn after everything else, for the same reason.
  const heldHeartbeats = overrides.faultsOff !== true && random.chance(heldHeartbeatsWorldChance)
  // Drawn after everything else, for the same reason.
  const drawnHealedWaves = random.pick([0, 2, 4, 8])
  const healedWaves = overrides.enqueueAfterHeal === false ? 0 : (overrides.healedWaves ?? drawnHealedWaves)
  // Drawn after everything else, for the same reason.
  const drawnMembershipMoves = random.pick([0, 1, 2, 4])
  const membershipMoves = overrides.enqueueAfterHeal === false ? 0 : (overrides.membershipMoves ?? drawnMembershipMoves)
  // Drawn after everything else, for the same reason.
  const keyedWaves = random.pick([0, 0, 0.5, 1])
  const handOvers = overrides.handOvers ?? warmedUp(Random.make(seed ^ handOversSeedMask)).chance(handOversChance)
  const rowLockChance = drawRowLockChance(seed, overrides.rowLocks)
  const leaveRaces = overrides.leaveRaces ?? warmedUp(Random.make(seed ^ leaveRacesSeedMask)).chance(leaveRacesChance)
  if (!heldHeartbeats) return { ...options, workLoops, workBatch, handlerMsMax, stopChance, control, keyChances, healedEnqueues, heldHeartbeats, healedWaves, membershipMoves, keyedWaves, handOvers, rowLockChance, leaveRaces }
  // A held-heartbeats world overrides the faults and the work loops drawn above.
  for (const name of jobsFaultNames) faults[name] = name === 'heartbeat.held' ? heldHeartbeatChance : 0
  const longHandlersMs = Object.fromEntries(Object.entries(queues).map(([name, queue]) => [name, queue.visibilityTimeoutS * 3_000]))
  return { ...options, workLoops: 4, workBatch: null, handlerMsMax: longHandlersMs, stopChance, control: { pauseChance: 0, cancelRunningChance: 0, honourSignal: true }, keyChances, healedEnqueues, heldHeartbeats, healedWaves, membershipMoves, keyedWaves, handOvers, rowLockChance, leaveRaces }
}

// The row-lock windows' chance, on a stream of its own (0: none); `pinned` forces them on or off.
function drawRowLockChance(seed: number, pinned: boolean | undefined): number {
  const random = warmedUp(Random.make(seed ^ rowLocksSeedMask))
  const on = random.chance(rowLocksWorldChance)
  const chance = random.pick(rowLockChances)
  return pinned === false || (pinned !== true && !on) ? 0 : chance
}

// `random` past its first draws: a stream seeded from a small number (a seed, masked) draws
// nearly the same first values for neighbouring seeds, which would give a run of seeds one world.
function warmedUp(random: Random): Random {
  for (let draw = 0; draw < streamWarmUpDraws; draw++) random.float()
  return random
}
const streamWarmUpDraws = 16

/** One line per option, for the run's header. */
export function describeJobsOptions(options: JobsSwarmOptions): string[] {
  const queues = Object.entries(options.queues).map(([name, q]) => {
    const rate = (what: string, limit: SimRateLimit | undefined) => (limit === undefined ? '' : `, ${what} ${limit.perSecond}/s burst ${limit.burst}`)
    const limits = `${q.concurrencyPerKey === undefined ? '' : `, ${q.concurrencyPerKey} per key`}${q.fairnessWeights === undefined ? '' : `, weights ${JSON.stringify(q.fairnessWeights)}`}${rate('rate', q.rateLimit)}${rate('rate per key', q.rateLimitPerKey)}`
    return `${name}(vis ${q.visibilityTimeoutS}s, max ${q.maxAttempts}, backoff ${q.backoffBaseS}s, ${q.partitions} partition${q.partitions === 1 ? '' : 's'}${limits})`
  })
  const w = options.weights
  const a = options.actions
  const e = options.enqueueChances
  return [
    `seed=${options.seed} hosts=${options.hosts} steps=${options.steps} queues ${queues.join(' ')}`,
    `roles ${options.roles.map((role, i) => `host-${i + 1}=${role}`).join(' ')} · claims elsewhere ${options.claimElsewhere}`,
    `weights enqueue=${w.enqueue} claim=${w.claim} act=${w.act} cancel=${w.cancel} ackBatch=${w.ackBatch} getJob=${w.getJob} sweep=${w.sweep}`,
    `actions ack=${a.ack} heartbeat=${a.heartbeat} retry=${a.retry} fail=${a.fail} drop=${a.drop} late=${a.late} · enqueue chances priority=${e.priority} runAt=${e.runAt} expiresAt=${e.expiresAt} maxAttempts=${e.maxAttempts}`,
    `faults ${describeFaults(options.faults)}`,
    `work concurrency ${options.workLoops}${options.workBatch === null ? '' : ` batch ${options.workBatch}`} · handlers up to ${Object.entries(options.handlerMsMax).map(([name, ms]) => `${name} ${ms} ms`).join(', ')} · stop chance ${options.stopChance}`,
    `operators pause chance ${options.control.pauseChance} · cancel running chance ${options.control.cancelRunningChance} · handlers ${options.control.honourSignal ? 'honour' : 'ignore'} job.signal`,
    `keys concurrency chance ${options.keyChances.concurrencyKey} · fairness chance ${options.keyChances.fairnessKey} · enqueues after the heal ${options.healedEnqueues} · waves ${options.healedWaves}${options.keyedWaves > 0 ? ` (keyed ${options.keyedWaves})` : ''} · membership moves ${options.membershipMoves}${options.membershipMoves > 0 && options.leaveRaces ? ' (leaves race hand-overs)' : ''}${options.heldHeartbeats ? ' · held heartbeats world' : ''}${options.handOvers ? ' · hand-overs at enqueue' : ''}${options.rowLockChance > 0 ? ` · row-lock windows ${options.rowLockChance}` : ''}`,
  ]
}
