/**
 * DeferredHistory — a History whose answers wait until the caller releases them, so the
 * lifecycle walkthrough can make deliveries complete in the order it wants to show (task 2
 * before task 1: an acknowledgement gap).
 *
 * Invariants: one pending answer per job at a time; releasing a job that History was not asked
 * about is a bug in the walkthrough and crashes.
 *
 * Does not: keep execution state. It answers whatever it is told; a real History (src/jobs)
 * decides `started` / `already-started` / `obsolete` from its own records.
 */
import type { History, PollerInfo, RecordStartResult } from '../actors/History.ts'
import type { Task } from '../domain/Task.ts'
import { assert } from '../kernel/assert.ts'

/** A History that answers only when told to. */
export class DeferredHistory implements History {
  readonly #pending = new Map<string, (result: RecordStartResult) => void>()

  /** Records the question and waits for `release(task.jobId, …)`. */
  recordTaskStarted(task: Task, _poller: PollerInfo): Promise<RecordStartResult> {
    assert(!this.#pending.has(task.jobId), `History already has an unanswered start for ${task.jobId}`)
    return new Promise((resolve) => {
      this.#pending.set(task.jobId, resolve)
    })
  }

  /** Job ids History was asked about and has not answered, in the order asked. */
  waiting(): ReadonlyArray<string> {
    return [...this.#pending.keys()]
  }

  /** Answers the start of `jobId` (by default: started, with no response payload). */
  release(jobId: string, result: RecordStartResult = { kind: 'started', response: null }): void {
    const resolve = this.#pending.get(jobId)
    assert(resolve !== undefined, `History was not asked to start ${jobId}`)
    this.#pending.delete(jobId)
    resolve(result)
  }
}
