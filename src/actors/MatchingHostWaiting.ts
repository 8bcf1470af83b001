/**
 * MatchingHostWaiting — the polls of one Matching host that wait on one partition of a family
 * the host owns several partitions of, so that a task stored on another of those partitions
 * reaches one of them at once.
 *
 * A poll waits on one partition (MatchingHostRequests.ts), and partitions of a host do not
 * forward tasks to each other. An add prefers a partition where a poll waits, but adds issued
 * together all see the same waiting poll, and a poll that chose its partition while an add was
 * still being stored elsewhere does not see that task: the task is stored on partition A while
 * an idle poll waits on partition B until its wait runs out. So when an add is stored (spooled,
 * not matched), the host moves one poll waiting on another partition of the family: it cancels
 * that poll's wait there (a task already with History still reaches it) and polls again on the
 * partition that stored the task, within the poll's own deadline. One stored task moves at most
 * one poll. The same holds for tasks a partition makes ready with no poll waiting there (a
 * backlog page read after an acquire, a retry's back-off ending): the partition reports them
 * (`taskStored` again) after each such step. Likewise a poll that waits with nothing on a partition
 * while another partition of the family has a task ready — its ready task turned out to be stale
 * (its job already started elsewhere, so the delivery started nothing), or several polls chose the
 * partition for its one ready task — moves there when the partition reports its polls idle,
 * unless another of its own queues there has a task ready (a poll waits in its version's queue
 * and the default one: one idle beside the other's ready task stays, and takes it).
 * A poll of a family whose other partitions the host did not own when it chose is registered too:
 * a partition the host gains later may make tasks ready. A poll whose wait is up (a poll of no
 * wait stays in its queue until its deadline's timer fires, at that same instant), whose caller
 * aborted it, or that a queue has with History (a task it was matched, answering it where it is) is
 * passed over: moved, it would not poll again, and the move would be spent on it while an idle poll
 * with time left stays where it is.
 *
 * Invariants: an entry lives exactly while its partition wait does (the poll's answer removes
 * it); a moved entry is never moved again, and only one that can still poll again is moved;
 * families with no waiting poll hold no entry.
 *
 * Does not: move tasks, forward to other hosts, or order pollers (the partition's queue does).
 */
import type { PartitionKey } from '../domain/QueueKey.ts'

/** One poll waiting on one partition of a family the host owns several partitions of. */
export interface WaitingPoll {
  /** The partition number it waits on. */
  readonly partition: number
  /**
   * True while a move would poll again: its deadline is still ahead, its caller has not aborted it,
   * and no queue has it with History (a task on its way would answer it where it is).
   */
  readonly canMove: () => boolean
  /** True when the poll may take tasks stored on `partition` of its family (its queues are there). */
  readonly canTakeFrom: (partition: number) => boolean
  /** Cancels its wait and sends it to `partition`; called at most once. */
  readonly moveTo: (partition: number) => void
  /** True when one of its own queues on `partition` has a task ready now (the poll waits in each). */
  readonly readyHere: () => boolean
  /** Another partition of its family it may take from that has a task ready now, if any. */
  readonly readyElsewhere: () => number | undefined
}

/** The waiting polls of a host, by family and task type. */
export interface HostWaitingPolls {
  /** Registers a poll's wait; the returned function removes it (call it when the wait answers). */
  add(key: PartitionKey, poll: WaitingPoll): () => void
  /** A task was stored on `key`'s partition: moves one poll waiting on another partition of its family there. */
  taskStored(key: PartitionKey): void
  /**
   * Polls wait on `key`'s partition with no task ready there (a delivery started nothing): moves
   * one of them to another partition of its family that has a task ready.
   */
  pollsIdle(key: PartitionKey): void
  /** Families with waiting polls (diagnostics, kernel/Sizes.ts). */
  size(): number
}

const waitKey = (key: PartitionKey): string => `${key.namespace}\u0000${key.family}\u0000${key.type}`

/** An empty book of waiting polls. */
export function makeHostWaitingPolls(): HostWaitingPolls {
  const byFamily = new Map<string, Set<WaitingPoll>>()
  return {
    add(key, poll) {
      const family = waitKey(key)
      let polls = byFamily.get(family)
      if (polls === undefined) byFamily.set(family, (polls = new Set()))
      polls.add(poll)
      const waiting = polls
      return () => {
        waiting.delete(poll)
        if (waiting.size === 0 && byFamily.get(family) === waiting) byFamily.delete(family)
      }
    },
    taskStored(key) {
      const polls = byFamily.get(waitKey(key))
      if (polls === undefined) return
      for (const poll of polls) {
        if (poll.partition === key.partition || !poll.canMove() || !poll.canTakeFrom(key.partition)) continue
        polls.delete(poll)
        if (polls.size === 0) byFamily.delete(waitKey(key))
        return poll.moveTo(key.partition)
      }
    },
    pollsIdle(key) {
      const polls = byFamily.get(waitKey(key))
      if (polls === undefined) return
      for (const poll of polls) {
        // A poll idle in one of its queues while another of them has a task ready stays: moved,
        // it would choose this partition again for that task, and be moved again, without end.
        if (poll.partition !== key.partition || !poll.canMove() || poll.readyHere()) continue
        const target = poll.readyElsewhere()
        if (target === undefined) continue
        polls.delete(poll)
        if (polls.size === 0) byFamily.delete(waitKey(key))
        return poll.moveTo(target)
      }
    },
    size: () => byFamily.size,
  }
}
