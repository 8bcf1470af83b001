/**
 * BoundedMoves — a simulated host's book of waiting polls (src/actors/MatchingHostWaiting.ts),
 * counted. Moving a poll to another partition of its host lets no virtual time pass, so polls
 * that keep moving between partitions at one instant are a livelock: a real host would spin in
 * its scheduler and starve its event loop (no timer, no I/O), and the simulator, whose clock only
 * advances between steps, would hang without a word. Past `movesPerInstantMax` moves at one
 * instant the book reports once (`onRunaway`, a violation) and moves nothing more at that
 * instant, so the world runs on to its end and its other checkers report too.
 *
 * Does not: judge single moves (the host decides them) or change a move under the bound.
 */
import { type HostWaitingPolls, makeHostWaitingPolls } from '../../src/actors/MatchingHostWaiting.ts'

/** Moves at one instant past which polls are moving without end: far above any honest burst (a few per poll). */
export const movesPerInstantMax = 1_000

/** Wraps `book` (default: the host's own) so a livelock of moves is reported and broken. */
export function boundedMoves(now: () => number, onRunaway: (detail: string) => void, book: HostWaitingPolls = makeHostWaitingPolls()): HostWaitingPolls {
  let instant = Number.NaN
  let moves = 0
  let reported = false
  return {
    ...book,
    add: (key, poll) =>
      book.add(key, {
        ...poll,
        moveTo(partition) {
          if (now() !== instant) {
            instant = now()
            moves = 0
          }
          if (++moves <= movesPerInstantMax) return poll.moveTo(partition)
          if (reported) return
          reported = true
          onRunaway(`polls of ${key.namespace}/${key.family}/${key.type} moved between partitions more than ${movesPerInstantMax} times at t=${instant} (last: ${poll.partition} → ${partition}): a livelock`)
        },
      }),
  }
}
