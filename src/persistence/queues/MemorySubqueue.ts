/**
 * MemorySubqueue — the stored rows of one subqueue (one priority level) of one physical queue
 * in the memory store: the in-memory twin of the `tasks` rows with that (queue, subqueue).
 *
 * Invariants: ids are strictly ascending (the store allocates them from one growing sequence,
 * and relocation appends above the destination's last id), so appending is O(1), reading after
 * an id and deleting a prefix are O(log n) by binary search from a head index. Deleted prefix
 * slots are compacted away once they are the larger half, keeping memory O(live rows) with
 * amortized O(1) cost.
 *
 * Does not: fence, validate, or know its queue. It never hands out its own task objects:
 * every task leaving it is a fresh copy, so callers cannot change what is stored.
 */
import type { StoredTask, Task } from '../../domain/Task.ts'
import { assert } from '../../kernel/assert.ts'

/** A fresh copy of a (validated) task; tasks are flat except for the version directive. */
export function copyTask(task: Task): Task {
  const directive = task.versionDirective
  return {
    jobId: task.jobId,
    runId: task.runId,
    kind: task.kind,
    versionDirective: directive.kind === 'pinned' ? { kind: 'pinned', version: directive.version } : { kind: directive.kind },
    priority: task.priority,
    createdAtMs: task.createdAtMs,
    expiresAtMs: task.expiresAtMs,
  }
}

// Compaction waits for this many dead slots so that small queues never copy.
const compactionSlotsMin = 1024

/** Ascending task rows of one subqueue. */
export class MemorySubqueue {
  #ids: number[] = []
  #tasks: Task[] = []
  #head = 0

  /** Rows stored. */
  get size(): number {
    return this.#ids.length - this.#head
  }

  /** The highest stored id, or 0 when empty. */
  get lastId(): number {
    return this.size === 0 ? 0 : (this.#ids[this.#ids.length - 1] as number)
  }

  /** Stores `task` under `taskId`, which must exceed every stored id. The task is kept as given (callers pass a fresh copy). */
  append(taskId: number, task: Task): void {
    assert(taskId > this.lastId, `subqueue append of id ${taskId} not above ${this.lastId}`)
    this.#ids.push(taskId)
    this.#tasks.push(task)
  }

  /** Copies of up to `limit` rows with id > `afterTaskId`, ascending. */
  readAfter(afterTaskId: number, limit: number): StoredTask[] {
    const start = this.#firstAbove(afterTaskId)
    const end = Math.min(this.#ids.length, start + limit)
    const rows: StoredTask[] = []
    for (let index = start; index < end; index++) {
      rows.push({ taskId: this.#ids[index] as number, task: copyTask(this.#tasks[index] as Task) })
    }
    return rows
  }

  /** Deletes every row with id ≤ `ackLevel`; returns how many. */
  deleteThrough(ackLevel: number): number {
    const end = this.#firstAbove(ackLevel)
    const deleted = end - this.#head
    if (deleted === 0) return 0
    for (let index = this.#head; index < end; index++) (this.#tasks as Array<Task | undefined>)[index] = undefined
    this.#head = end
    if (this.#head >= compactionSlotsMin && this.#head * 2 >= this.#ids.length) this.#compact()
    return deleted
  }

  /** True when a row with `taskId` is stored. */
  has(taskId: number): boolean {
    const index = this.#firstAbove(taskId - 1)
    return index < this.#ids.length && this.#ids[index] === taskId
  }

  /**
   * Removes the rows with the given ids (ascending; each must be stored) and returns their tasks
   * in that order. O(n): relocation is rare, so it rebuilds rather than keeping a tombstone set.
   */
  take(taskIds: ReadonlyArray<number>): Task[] {
    if (taskIds.length === 0) return []
    const wanted = new Set(taskIds)
    const taken: Task[] = []
    const ids: number[] = []
    const tasks: Task[] = []
    for (let index = this.#head; index < this.#ids.length; index++) {
      const id = this.#ids[index] as number
      if (wanted.has(id)) taken.push(this.#tasks[index] as Task)
      else {
        ids.push(id)
        tasks.push(this.#tasks[index] as Task)
      }
    }
    assert(taken.length === taskIds.length, 'subqueue take of ids that are not stored')
    this.#ids = ids
    this.#tasks = tasks
    this.#head = 0
    return taken
  }

  /** Every stored row as [id, task] (internal references: for the store's own snapshot export, which copies). */
  *rows(): IterableIterator<readonly [number, Task]> {
    for (let index = this.#head; index < this.#ids.length; index++) yield [this.#ids[index] as number, this.#tasks[index] as Task]
  }

  // Index of the first live row with id > `taskId` (ids.length when none).
  #firstAbove(taskId: number): number {
    let low = this.#head
    let high = this.#ids.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if ((this.#ids[middle] as number) <= taskId) low = middle + 1
      else high = middle
    }
    return low
  }

  #compact(): void {
    this.#ids = this.#ids.slice(this.#head)
    this.#tasks = this.#tasks.slice(this.#head)
    this.#head = 0
  }
}
