/**
 * Rebalance — how many partitions a membership change moved: every partition's owner under the
 * view before the change and under the view after it (rendezvous hashing, domain/Rendezvous.ts,
 * as every engine computes it), compared. Rendezvous hashing promises that a host leaving moves
 * only its own partitions (about 1/N of them, N the hosts before) and a host joining moves only
 * the ones it now wins (about 1/N, N the hosts after); `strayMoves` counts moves that promise
 * does not allow (neither side of the move is a host that left or joined), which should be none.
 *
 * Does not: look at what the engines loaded (partitions are loaded on demand); it measures the
 * assignment the engines route by.
 */
import { encodePartitionKey, makePartitionKey } from '../../src/domain/QueueKey.ts'
import { ownerOfEncoded } from '../../src/domain/Rendezvous.ts'
import { jobsNamespace, jobTaskType } from '../../src/jobs/QueueRouting.ts'

/** The partitions one membership change moved. */
export interface Rebalance {
  readonly partitions: number
  readonly hostsBefore: number
  readonly hostsAfter: number
  /** Partitions whose owner differs between the two views. */
  readonly moved: number
  /** `moved / partitions`. */
  readonly movedFraction: number
  /** What rendezvous hashing expects: 1/N, N the larger of the two views (the leaver's or the joiner's share). */
  readonly expectedFraction: number
  /** Moves between two hosts present in both views: none, if the hashing keeps its promise. */
  readonly strayMoves: number
}

/** The queue names of a scale run of `count` queues. */
export function scaleQueueNames(count: number): string[] {
  const digits = String(Math.max(0, count - 1)).length
  return Array.from({ length: count }, (_, i) => `queue-${String(i).padStart(digits, '0')}`)
}

/** Compares every partition of `queues` (each with `partitionsPerQueue`) under `before` and `after`. */
export function rebalance(queues: ReadonlyArray<string>, partitionsPerQueue: number, before: ReadonlyArray<string>, after: ReadonlyArray<string>): Rebalance {
  const stayed = new Set(before.filter((host) => after.includes(host)))
  let moved = 0
  let strayMoves = 0
  for (const family of queues) {
    for (let partition = 0; partition < partitionsPerQueue; partition++) {
      const encoded = encodePartitionKey(makePartitionKey({ namespace: jobsNamespace, family, type: jobTaskType, partition }))
      const from = ownerOfEncoded(encoded, before)
      const to = ownerOfEncoded(encoded, after)
      if (from === to) continue
      moved++
      if (from !== null && to !== null && stayed.has(from) && stayed.has(to)) strayMoves++
    }
  }
  const partitions = queues.length * partitionsPerQueue
  const hosts = Math.max(before.length, after.length)
  return { partitions, hostsBefore: before.length, hostsAfter: after.length, moved, movedFraction: partitions === 0 ? 0 : moved / partitions, expectedFraction: hosts === 0 ? 0 : 1 / hosts, strayMoves }
}
