/**
 * MembershipMoves — membership that moves once the faults healed (JobsSwarm.ts `membershipMoves`),
 * and when prompt delivery is judged around each move.
 *
 * Each move comes after a quiet spell in which only timers run (so the workers wait idle, parked
 * in their queues' lines or forwarded to the owners): a worker engine leaves the group gracefully
 * (its `close()`: loops stopped, partitions unloaded with their final checkpoints, membership row
 * gone, and the others take its partitions at their next beat), or an engine joins (one that left
 * comes back as a new process, or a new worker process starts, named so that it takes a whole
 * queue from one engine, or at least some partition, when one of a few names does) and takes its
 * rendezvous share of the partitions, which their old owners unload after the unload delay — its
 * `work` loops start a moment after it joined, as a rolling deploy starts a process's workers
 * after its engine. Within a second of every view agreeing, producers enqueue a few jobs through
 * any live engine. Everything a move does and when is drawn on a stream of its own, so a seed that
 * draws no move runs the world it ran before moves existed.
 *
 * On seeds that draw races (JobsSwarm.ts `leaveRaces`) a leave races a hand-over to the leaver:
 * in the instant its `close()` begins, a job due now is being enqueued, through the leaver (to a
 * queue it owns a partition of, where eager dispatch inserts the job claimed for its idle worker)
 * or through another engine (whose enqueue may hand the job to a claim of the leaver's waiting
 * there), so what is handed to a closing engine must go back to the store. What each race does is
 * drawn on a stream of its own, so the moves draw what they drew without races.
 *
 * The window rule: from a move's start until every live engine's membership view shows exactly
 * the live workers (the views agree), and then the unload delay more (every engine that lost a
 * partition unloads it within that delay of its own view's change, and the new owner takes it on
 * the first request or pass that reaches it, an instant with faults off), prompt delivery is not
 * judged; from then on, it is judged again with its bound. A queue whose partition found its
 * range taken during a move waits out its restart back-off only where the engine that lost it is
 * still the partition's owner once the views agree (a partition that moved away may lose its
 * range to its new owner before its old one unloads it: nobody waits for that). A poll forwarded
 * to an engine that left, sent after it stopped listening (its row gone, the sender's view not yet
 * changed), is lost, and its queue is judged again once the poll's timeout passed (the cost Forwarding.ts documents for a poll lost in transit).
 *
 * Does not: judge anything itself (JobsWorld.ts judges prompt delivery), or touch the world's
 * other streams.
 */
import { makePartitionKey } from '../../src/domain/QueueKey.ts'
import { ownerOf } from '../../src/domain/Rendezvous.ts'
import { jobsNamespace, jobTaskType } from '../../src/jobs/QueueRouting.ts'
import { forwardedPollGraceMs, membershipUnloadDelayMs } from '../../src/kernel/Limits.ts'
import type { ManualClock } from '../../src/kernel/Clock.ts'
import type { Random } from '../../src/kernel/Random.ts'
import { Decisions } from '../core/Decisions.ts'
import type { JobClients } from './JobClients.ts'
import type { JobsHost } from './JobsHost.ts'
import type { SimQueueOptions } from './JobsSwarm.ts'

// The moves' stream of decisions is seeded apart from the world's (any constant that differs from the other streams' masks).
const moveSeedMask = 0x3e3b
// The leaves' races (JobsSwarm.ts `leaveRaces`) draw on a stream of their own, seeded so.
const raceSeedMask = 0x7d45
// The quiet spell before each move: from the moment prompt delivery is judged, or the last move's window.
const moveQuietMsMin = 2_000
const moveQuietMsMax = 8_000
// A joining engine's `work` loops start this long after it joined (0: with its engine).
const joinLoopsMsMax = 3_000
// Enqueues after each move, each up to this long after every view agreed: across the old
// owners' unload (within the unload delay) and the first second after the window opens, while
// workers whose claims waited on a partition that moved look for jobs again.
const arrivalsMin = 1
const arrivalsMax = 3
const arrivalMsMax = 1_000
// A new process is named after the world's last host, one of this many unused names chosen for
// the partitions it takes (a join that moves nothing tests nothing).
/** How many unused names after the world's last host a join chooses its new worker's from. */
export const joinNamesMax = 8

/** What the moves need from the world. */
export interface MembershipMovesDeps {
  readonly seed: number
  /** How many moves come (JobsSwarm.ts `membershipMoves`). */
  readonly moves: number
  /** Whether each leave races a hand-over to the leaving engine (JobsSwarm.ts `leaveRaces`). */
  readonly leaveRaces: boolean
  readonly clock: ManualClock
  readonly queues: Readonly<Record<string, SimQueueOptions>>
  /** The world's hosts, in order; a new process joins at the end. */
  readonly hosts: JobsHost[]
  readonly clients: JobClients
  /** A new worker process `hostId` of the world (its `work` loops wait for `startAllWork`). */
  readonly makeWorker: (hostId: string, random: Random) => JobsHost
  /** True when the world holds `host` for a moment of its own (a held wave's loops): it does not leave then. */
  readonly heldByWorld: (host: JobsHost) => boolean
  readonly log: (line: string) => void
}

// A move under way: when its window opens (null until the views agree), the enqueues and the
// joiner's loops still to come.
interface Move {
  judgedFromMs: number | null
  arrivalsAtMs: number[]
  loopsAtMs: { readonly host: JobsHost; readonly incarnation: number; readonly atMs: number } | null
  // Ranges lost during the move, kept until the views agree: by which host, of which partition.
  readonly losses: Array<{ readonly hostId: string; readonly family: string; readonly partition: number; readonly atMs: number }>
}

/** The membership moves of one world's final phase. */
export class MembershipMoves {
  readonly #deps: MembershipMovesDeps
  readonly #decide: Decisions
  // What each leave's race does (JobsSwarm.ts `leaveRaces`): a stream apart from the moves', so
  // the moves draw what they drew without races.
  readonly #race: Decisions
  #left: number
  #nextMs = Number.POSITIVE_INFINITY
  #move: Move | null = null
  // When prompt delivery is judged again after the last move (−∞: no move yet).
  #judgedFromMs = Number.NEGATIVE_INFINITY
  // Per queue: until when a poll forwarded to an engine that had left waits for an answer that never comes.
  readonly #lostPollUntilMs = new Map<string, number>()
  readonly #closing: Array<Promise<void>> = []

  constructor(deps: MembershipMovesDeps) {
    this.#deps = deps
    this.#decide = new Decisions(deps.seed ^ moveSeedMask)
    this.#race = new Decisions(deps.seed ^ raceSeedMask)
    this.#left = deps.moves
  }

  /** Prompt delivery is judged from `judgedFromMs` on: the first move comes after a quiet spell from then. */
  healed(judgedFromMs: number): void {
    if (this.#left > 0) this.#nextMs = judgedFromMs + this.#decide.int(moveQuietMsMin, moveQuietMsMax)
  }

  /** True while a move is under way (from its start until its window opens). */
  moving(): boolean {
    return this.#move !== null && (this.#move.judgedFromMs === null || this.#move.judgedFromMs > this.#deps.clock.now())
  }

  /** True once every move came and its window opened, and its arrivals and loops came. */
  done(): boolean {
    return this.#left === 0 && this.#move === null
  }

  /**
   * Prompt delivery is not judged before this (+∞ while a move waits for the views to agree); for
   * `queue`, nor while a poll of it forwarded to an engine that had left still waits.
   */
  judgedFromMs(queue?: string): number {
    const ofQueue = queue === undefined ? Number.NEGATIVE_INFINITY : (this.#lostPollUntilMs.get(queue) ?? Number.NEGATIVE_INFINITY)
    if (this.#move === null) return Math.max(this.#judgedFromMs, ofQueue)
    return Math.max(this.#move.judgedFromMs ?? Number.POSITIVE_INFINITY, ofQueue)
  }

  /**
   * A poll of `queue` waiting `waitMs` went to `toHostId`. One sent to an engine that left the
   * group once it stopped listening is lost (it stops listening once its membership row is gone,
   * and the sender's view still shows it until its next beat), and its claim waits until the poll's
   * timeout, as the engine documents for a poll lost in transit (Forwarding.ts): its queue is
   * judged again from then.
   */
  pollSent(toHostId: string, queue: string, waitMs: number): void {
    if (!this.#deps.hosts.some((host) => host.id === toHostId && host.left && !host.listening())) return
    const untilMs = this.#deps.clock.now() + waitMs + forwardedPollGraceMs
    this.#lostPollUntilMs.set(queue, Math.max(this.#lostPollUntilMs.get(queue) ?? Number.NEGATIVE_INFINITY, untilMs))
    this.#deps.log(`move: a poll of ${queue} went to ${toHostId}, which left; ${queue} is judged again from +${untilMs - this.#deps.clock.now()}`)
  }

  /** The moments time must not step over: the next move, arrivals and a joiner's loops. */
  moments(): number[] {
    const move = this.#move
    if (move === null) return [this.#nextMs]
    return [this.#nextMs, ...move.arrivalsAtMs, ...(move.loopsAtMs === null ? [] : [move.loopsAtMs.atMs]), ...(move.judgedFromMs === null ? [] : [move.judgedFromMs])]
  }

  /**
   * A host's physical queue of `family`'s partition found its range taken (or failed to
   * acquire) at `atMs`. True when the world waits out its restart back-off: outside a move, and
   * during one when the loser owns the partition once the views agree. A loss before they agree
   * is kept until then (`step` returns the ones to wait out).
   */
  lost(hostId: string, family: string, partition: number, atMs: number): boolean {
    const move = this.#move
    if (move === null || (move.judgedFromMs !== null && move.judgedFromMs <= atMs)) return true
    if (move.judgedFromMs !== null) return this.#owns(hostId, family, partition)
    move.losses.push({ hostId, family, partition, atMs })
    return false
  }

  // Whether live host `hostId`'s view gives it `family`'s `partition`.
  #owns(hostId: string, family: string, partition: number): boolean {
    return this.#deps.hosts.some((host) => host.id === hostId && host.alive && host.ownedPartitions(family).includes(partition))
  }

  /** The engines still closing after they left (the world waits for them when it closes). */
  closing(): ReadonlyArray<Promise<void>> {
    return this.#closing
  }

  /**
   * One step of the final phase: a move whose moment came starts, arrivals and a joiner's loops
   * whose moments came happen, and a move whose views agree opens its window. Returns the losses
   * of the move whose views just agreed that the world must still wait out (their loser owns the
   * partition), each with when it happened.
   */
  step(): Array<{ readonly family: string; readonly atMs: number }> {
    const now = this.#deps.clock.now()
    if (this.#move === null && this.#left > 0 && now >= this.#nextMs) this.#start(now)
    const move = this.#move
    if (move === null) return []
    let kept: Array<{ readonly family: string; readonly atMs: number }> = []
    if (move.judgedFromMs === null && this.#viewsAgree()) {
      move.judgedFromMs = now + membershipUnloadDelayMs
      move.arrivalsAtMs = Array.from({ length: this.#decide.int(arrivalsMin, arrivalsMax) }, () => now + this.#decide.int(0, arrivalMsMax)).sort((x, y) => x - y)
      this.#deps.log(`move: every view agrees; prompt delivery is judged again from +${membershipUnloadDelayMs}`)
      kept = move.losses.filter((loss) => this.#owns(loss.hostId, loss.family, loss.partition))
    }
    while (move.arrivalsAtMs.length > 0 && (move.arrivalsAtMs[0] as number) <= now) {
      move.arrivalsAtMs.shift()
      const alive = this.#deps.hosts.filter((host) => host.alive)
      if (alive.length > 0) this.#deps.clients.enqueue(this.#decide.pick(alive), this.#decide)
    }
    const loops = move.loopsAtMs
    if (loops !== null && loops.atMs <= now) {
      if (loops.host.incarnation === loops.incarnation && loops.host.alive) {
        this.#deps.log(`move: ${loops.host.id} starts its work loops`)
        loops.host.startAllWork()
      }
      move.loopsAtMs = null
    }
    if (move.judgedFromMs !== null && now >= move.judgedFromMs && move.arrivalsAtMs.length === 0 && move.loopsAtMs === null) {
      this.#judgedFromMs = move.judgedFromMs
      this.#move = null
      if (this.#left > 0) this.#nextMs = now + this.#decide.int(moveQuietMsMin, moveQuietMsMax)
    }
    return kept
  }

  // The name of a new worker process: of a few unused ones after the world's last host, the first
  // that takes every partition of some queue an engine owns (the queue leaves that engine: its
  // dispatch there ends), else the first that takes some partition from its owner.
  #joinerName(workers: ReadonlyArray<string>): string {
    const taken = new Set(this.#deps.hosts.map((host) => host.id))
    const names: string[] = []
    for (let n = this.#deps.hosts.length + 1; names.length < joinNamesMax; n++) if (!taken.has(`host-${n}`)) names.push(`host-${n}`)
    const owners = (name: string | null) =>
      Object.entries(this.#deps.queues).map(([family, queue]) =>
        Array.from({ length: queue.partitions }, (_, partition) => ownerOf(makePartitionKey({ namespace: jobsNamespace, family, type: jobTaskType, partition }), name === null ? workers : [...workers, name])),
      )
    const before = owners(null)
    const takesAll = (name: string): boolean => owners(name).some((after, q) => workers.some((worker) => before[q]?.includes(worker) === true && !after.includes(worker)))
    const takesAny = (name: string): boolean => owners(name).some((after) => after.includes(name))
    return names.find(takesAll) ?? names.find(takesAny) ?? (names[0] as string)
  }

  // A job due now is enqueued in the instant `leaver` begins closing (its enqueue's I/O runs after
  // `close()` began): through the leaver itself, to a queue one of whose partitions it owns, where
  // its idle workers wait in line and eager dispatch inserts the job claimed for one; or through
  // another live engine, whose enqueue may hand the job to a claim of the leaver's waiting there
  // (hand-overs at enqueue), its `handed` message reaching a closing engine.
  #raceLeave(leaver: JobsHost): void {
    const queues = Object.keys(this.#deps.queues)
    const owned = queues.filter((queue) => leaver.ownedPartitions(queue).length > 0)
    const queue = this.#race.pick(owned.length > 0 ? owned : queues)
    const others = this.#deps.hosts.filter((host) => host.alive && host !== leaver)
    const through = others.length > 0 && this.#race.chance(0.5) ? this.#race.pick(others) : leaver
    this.#deps.clients.enqueueDueNow(through, queue, `race with ${leaver.id}'s leave: `)
  }

  // Every live host's view shows exactly the live workers.
  #viewsAgree(): boolean {
    const alive = this.#deps.hosts.filter((host) => host.alive)
    const workers = alive.filter((host) => host.role === 'worker').map((host) => host.id).sort().join(',')
    return alive.every((host) => [...host.view()].sort().join(',') === workers)
  }

  #start(now: number): void {
    this.#left--
    this.#nextMs = Number.POSITIVE_INFINITY
    const hosts = this.#deps.hosts
    const workers = hosts.filter((host) => host.alive && host.role === 'worker')
    // host-1 stays (the world sweeps and resumes through it); a host whose clients hold claims or
    // that the world holds for a moment of its own stays too.
    const free = workers.filter((host) => host !== hosts[0] && !this.#deps.heldByWorld(host) && !this.#deps.clients.held.some((held) => held.host === host))
    // One that owns a partition, when one may go: its partitions move.
    const owners = free.filter((host) => Object.keys(this.#deps.queues).some((queue) => host.ownedPartitions(queue).length > 0))
    const leavers = owners.length > 0 ? owners : free
    let loopsAtMs: Move['loopsAtMs'] = null
    if (leavers.length > 0 && this.#decide.chance(0.5)) {
      const host = this.#decide.pick(leavers)
      this.#deps.log(`move: ${host.id} leaves the group (close)`)
      this.#deps.clients.forget(host)
      if (this.#deps.leaveRaces) this.#raceLeave(host)
      this.#closing.push(host.leave())
    } else {
      const away = hosts.filter((host) => host.left)
      const back = away.length > 0 && this.#decide.chance(0.5) ? this.#decide.pick(away) : null
      const loopsMs = this.#decide.chance(0.25) ? 0 : this.#decide.int(1, joinLoopsMsMax)
      let host: JobsHost
      if (back !== null) {
        host = back
        this.#deps.log(`move: ${host.id} joins the group again (a new process), its work loops in ${loopsMs} ms`)
        host.restart(false)
      } else {
        const hostId = this.#joinerName(workers.map((worker) => worker.id))
        this.#deps.log(`move: ${hostId} joins the group (a new worker process), its work loops in ${loopsMs} ms`)
        host = this.#deps.makeWorker(hostId, this.#decide.fork())
        hosts.push(host)
      }
      loopsAtMs = { host, incarnation: host.incarnation, atMs: now + loopsMs }
    }
    this.#move = { judgedFromMs: null, arrivalsAtMs: [], loopsAtMs, losses: [] }
  }
}
