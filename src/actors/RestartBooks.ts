/**
 * RestartBooks — the restart back-off of each partition a Matching host serves, kept above its
 * instances (DESIGN.md §6): when a queue dies of lost ownership or a failed load, its partition
 * instance writes the delay into its book, and every later instance of the partition reads the
 * same book before it loads that queue again. So an instance that unloads (its default queue
 * died, it went idle, membership moved it) never takes the back-off with it.
 *
 * Bound: a book is kept while an instance of its partition is unfinished (loaded, or unloaded
 * but with queues still draining, which may still write it) and, after the last one finished,
 * while one of its delays still runs; then it goes. Entries whose delay has passed are forgotten
 * then too: a partition left alone for a whole delay starts its next back-off from the first step.
 *
 * Does not: time anything (the caller passes the clock's time) or decide delays (PartitionActor.ts).
 */
import type { RestartEntry } from './PartitionActor.ts'

/** The restart books of one host, by partition name. */
export interface RestartBooks {
  /** The book a new instance of partition `name` reads and writes; counts the instance as unfinished. */
  open(name: string): Map<string, RestartEntry>
  /** An instance of `name` finished: unloaded, its queues drained, so it writes its book no more. */
  finished(name: string, nowMs: number): void
  /** Books kept now (diagnostics). */
  size(): number
}

/** Makes a host's restart books. */
export function makeRestartBooks(): RestartBooks {
  const books = new Map<string, Map<string, RestartEntry>>()
  const unfinished = new Map<string, number>()
  // Books of partitions with no unfinished instance, kept only for a delay still running.
  const lingering = new Set<string>()

  // Drops `name`'s book if no instance may write it and no delay of it still runs.
  const forgetIfDone = (name: string, nowMs: number): void => {
    if (unfinished.has(name)) {
      lingering.delete(name)
      return
    }
    const book = books.get(name)
    if (book !== undefined) for (const [slot, entry] of book) if (entry.notBeforeMs <= nowMs) book.delete(slot)
    if (book === undefined || book.size === 0) {
      books.delete(name)
      lingering.delete(name)
    } else lingering.add(name)
  }

  return {
    open(name) {
      unfinished.set(name, (unfinished.get(name) ?? 0) + 1)
      lingering.delete(name)
      let book = books.get(name)
      if (book === undefined) books.set(name, (book = new Map()))
      return book
    },
    finished(name, nowMs) {
      const left = (unfinished.get(name) ?? 1) - 1
      if (left > 0) unfinished.set(name, left)
      else unfinished.delete(name)
      for (const other of lingering) forgetIfDone(other, nowMs)
      forgetIfDone(name, nowMs)
    },
    size: () => books.size,
  }
}
