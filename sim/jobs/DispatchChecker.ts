/**
 * DispatchChecker — the judge of what a queue's line polls cost, read from each engine's
 * dispatch steps (the event each dispatch machine took and the commands it asked for, as
 * `makeMatchbox({ onDispatchStep })` reports them). A line poll that Matching matched a job no
 * claim waits for made a claim for nobody: the job is kept and given back to the store at the
 * next pass. That costs statements, not time, so no delivery checker sees it; a poll left
 * running after it would take every job the queue's next pass adds to Matching, for nobody
 * again, ahead of the polls that wait for them (forwarded from other engines).
 *
 * - `poll for nobody ends`: after a step in which a line poll's job found no claim (the step
 *   keeps it), the queue's line polls running on that engine do not outnumber its claims parked
 *   on them (a claim handed a job stays parked until its wait ends, so a poll may stay for it).
 *
 * Polls and parked claims are counted per host incarnation and queue, from the steps alone:
 * a poll runs from its `linePoll.start` command until its `linePoll.end` command or its
 * `linePoll.stopped` or `linePoll.failed` event; a claim is parked from `claim.parked` until
 * `claim.unparked`. A dispatch the engine dropped held none of either, so a later one of the
 * same queue counts on from zero.
 *
 * Does not: judge who gets a job or when (the delivery checkers in JobsWorld.ts and
 * HandlerCheckers.ts do), or read the machine's context.
 */
import type { DispatchCommand, DispatchEvent } from '../../src/machines/DispatchProtocol.ts'

/** The names this checker reports under (JobCheckers.ts lists them with the others). */
export const dispatchCheckerNames = ['poll for nobody ends'] as const

/** One dispatch checker's name. */
export type DispatchCheckerName = (typeof dispatchCheckerNames)[number]

/** What the checker needs from the world. */
export interface DispatchCheckerDeps {
  readonly fail: (checker: DispatchCheckerName, sentence: string) => void
}

// One engine incarnation's queue: the line polls running and the claims parked on them.
interface QueueLine {
  readonly polls: Set<number>
  readonly parked: Set<number>
}

/** Judges the dispatch steps of every engine of a world (see the header). */
export class DispatchChecker {
  readonly #deps: DispatchCheckerDeps
  readonly #lines = new Map<string, QueueLine>()

  constructor(deps: DispatchCheckerDeps) {
    this.#deps = deps
  }

  /** One step of `queue`'s dispatch on host `hostId`'s incarnation `incarnation`, at world time `nowMs`. */
  step(hostId: string, incarnation: number, queue: string, event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, nowMs: number): void {
    const key = `${hostId}/${incarnation}/${queue}`
    let line = this.#lines.get(key)
    if (line === undefined) {
      line = { polls: new Set(), parked: new Set() }
      this.#lines.set(key, line)
    }
    if (event.type === 'claim.parked') line.parked.add(event.claimId)
    if (event.type === 'claim.unparked') line.parked.delete(event.claimId)
    if (event.type === 'linePoll.stopped' || event.type === 'linePoll.failed') line.polls.delete(event.pollId)
    let keptJob: string | null = null
    for (const command of commands) {
      if (command.type === 'linePoll.start') line.polls.add(command.params.pollId)
      else if (command.type === 'linePoll.end') line.polls.delete(command.params.pollId)
      else if (command.type === 'job.kept') keptJob = command.params.job.id
    }
    if (event.type !== 'linePoll.matched' || keptJob === null || line.polls.size <= line.parked.size) return
    this.#deps.fail(
      'poll for nobody ends',
      `job ${keptJob} of ${queue}, matched to line poll ${event.pollId} of ${hostId} at ${nowMs} with no claim waiting, was kept while ${line.polls.size} line poll${line.polls.size === 1 ? '' : 's'} ran on ${line.parked.size} claim${line.parked.size === 1 ? '' : 's'} parked: a poll left running takes the next jobs for nobody`,
    )
  }
}
