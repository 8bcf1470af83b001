/**
 * IdlePollChecker — the judge of how a Matching host spreads the polls that wait on a family of
 * which it owns several partitions, read from every physical queue of every host after each of
 * its steps (the queue's key and state, whether a poll waits in it, whether a task is ready in
 * it). Both workloads run it: the job engine's world over its engines' Matching hosts, the
 * Matching world over its hosts. A poll waits on one partition, and partitions do not forward
 * tasks to each other: a poll left waiting on a partition with nothing while another partition of
 * the host holds a task ready for it waits out its wait while the task waits for another poll.
 * The host moves such a poll (MatchingHostWaiting.ts) when tasks are ready on a partition where no
 * poll waits (a task stored, a backlog page read), and when polls wait with nothing ready (a
 * delivery that started nothing, several polls that chose one partition for one task); a job whose poll
 * is stuck so is often served another way (a claim straight from the store) within what prompt
 * delivery allows, so it is judged here, where the promise is made.
 *
 * - `idle poll moves`: on one host incarnation, a default queue of a family and task type with a
 *   poll waiting and no task ready, while the default queue of another partition of that family
 *   and type on the same host has a task ready, stays so no longer than `idlePollBoundMs` of
 *   virtual time.
 *
 * Judged at each step of a queue of the family on that host (the state changes only at steps):
 * when the condition ends, or is seen still holding past the bound. A queue is forgotten once
 * unloaded; a crashed incarnation's queues take no more steps, and are not judged.
 *
 * Judged from when the world says (`judgedFrom`: the job engine's world where prompt delivery is,
 * once healed and outside a membership move's window; the Matching world once healed and its
 * partitions have moved where the agreed view puts them — before that a host may be paused,
 * cut off or settling its view), and only over partitions the host's view gives it now (one
 * moving away is nobody's to move a poll to). The world hands it each host's physical queues
 * after their steps (the queue's actor, from the host's `onStep`).
 *
 * Does not: judge versioned queues (a poll of one version takes only its own version's tasks), polls
 * across hosts (forwarding is DispatchChecker's and the delivery checkers' business), or which
 * poll gets a task.
 */
import type { QueueKey } from '../../src/domain/QueueKey.ts'

/** The names this checker reports under (JobCheckers.ts lists them with the others). */
export const idlePollCheckerNames = ['idle poll moves'] as const

/** One idle-poll checker's name. */
export type IdlePollCheckerName = (typeof idlePollCheckerNames)[number]

/**
 * How long a host may leave a poll waiting idle on one partition of a family while another of
 * its partitions has a task ready, in virtual time. The host moves the poll in the very step that
 * leaves it idle (a task stored elsewhere, a delivery that started nothing), so the state need not
 * outlive its instant; far below a poll's wait (a second), which is what a poll that is never
 * moved costs.
 */
export const idlePollBoundMs = 100

/** What the checker reads of a physical queue (PhysicalQueueActor's public face). */
export interface QueueView {
  readonly key: QueueKey
  readonly state: 'loading' | 'owned' | 'draining' | 'unloaded'
  /** Polls waiting in the queue now (none unless owned). */
  pollerCount(): number
  hasReady(): boolean
}

/** What the checker needs from the world. */
export interface IdlePollCheckerDeps {
  readonly fail: (checker: IdlePollCheckerName, sentence: string) => void
  /**
   * True when host `hostId`'s membership view gives it partition `partition` of `family`'s
   * `type` queues now: a partition moving away (unloaded after the unload delay) is nobody's to
   * move a poll to.
   */
  readonly owns: (hostId: string, family: string, type: QueueKey['type'], partition: number) => boolean
  /**
   * World time from which `family` is judged (the header says when each world starts); before it
   * a host may be paused, cut off or settling its view.
   */
  readonly judgedFrom: (family: string) => number
}

// Since when a family and type of one host incarnation has held an idle poll beside a ready task, on which partitions, and whether that was told.
interface Stuck {
  readonly sinceMs: number
  readonly idle: number
  readonly ready: number
  told: boolean
}

/** Judges the physical queues of every host of a world (see the header). */
export class IdlePollChecker {
  readonly #deps: IdlePollCheckerDeps
  // Per host incarnation: its queues that took a step and have not unloaded.
  readonly #queues = new Map<string, Set<QueueView>>()
  // Per host incarnation, family and type: the stuck state now, if any.
  readonly #stuck = new Map<string, Stuck>()

  constructor(deps: IdlePollCheckerDeps) {
    this.#deps = deps
  }

  /** Physical queue `queue` of host `hostId`'s incarnation `incarnation` took a step, at world time `nowMs`. */
  step(hostId: string, incarnation: number, queue: QueueView, nowMs: number): void {
    const host = `${hostId}/${incarnation}`
    let queues = this.#queues.get(host)
    if (queues === undefined) this.#queues.set(host, (queues = new Set()))
    if (queue.state === 'unloaded') queues.delete(queue)
    else queues.add(queue)
    const { family, type } = queue.key
    const ofFamily = [...queues].filter((other) => other.key.family === family && other.key.type === type && other.key.version === null && this.#deps.owns(hostId, family, type, other.key.partition))
    const idle = ofFamily.find((other) => other.pollerCount() > 0 && !other.hasReady() && ofFamily.some((ready) => ready.key.partition !== other.key.partition && ready.hasReady()))
    const key = `${host}/${family}/${type}`
    const stuck = this.#stuck.get(key)
    if (idle === undefined) {
      if (stuck === undefined) return
      this.#stuck.delete(key)
      this.#judge(hostId, queue.key, stuck, nowMs, false)
      return
    }
    if (stuck === undefined) {
      const ready = ofFamily.find((other) => other.key.partition !== idle.key.partition && other.hasReady()) as QueueView
      this.#stuck.set(key, { sinceMs: nowMs, idle: idle.key.partition, ready: ready.key.partition, told: false })
      return
    }
    this.#judge(hostId, queue.key, stuck, nowMs, true)
  }

  #judge(hostId: string, key: QueueKey, stuck: Stuck, nowMs: number, holding: boolean): void {
    if (stuck.told || nowMs - Math.max(stuck.sinceMs, this.#deps.judgedFrom(key.family)) <= idlePollBoundMs) return
    stuck.told = true
    this.#deps.fail(
      'idle poll moves',
      `a poll waited on partition ${stuck.idle} of ${key.family}${key.type === 'activity' ? '' : ` (${key.type})`} on ${hostId} with no task ready from ${stuck.sinceMs} ${holding ? 'still at' : 'until'} ${nowMs}, while its partition ${stuck.ready} had a task ready: the poll waits out its wait while the task waits for another`,
    )
  }
}
