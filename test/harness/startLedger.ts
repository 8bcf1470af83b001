/**
 * startLedger — an in-memory History for tests: records starts per job id, answering `started`
 * the first time and `already-started` on every repeat, as a real History would. An optional
 * script may answer something else first (a retryable failure, say).
 *
 * Does not: time out claims or schedule new attempts (that is the Jobs History's business).
 */
import type { History, PollerInfo, RecordStartResult } from '../../src/actors/History.ts'
import type { Task } from '../../src/domain/Task.ts'

/** A History that remembers which jobs started. */
export interface StartLedger extends History {
  /** Job ids started at least once. */
  readonly started: ReadonlySet<string>
  /** recordTaskStarted calls per job id (including retries and repeats). */
  readonly calls: ReadonlyMap<string, number>
}

/**
 * A ledger. `script(jobId, call)` may answer call `call` (1-based) of a job itself; returning
 * undefined falls through to the normal started / already-started answer.
 */
export function makeStartLedger(script?: (jobId: string, call: number, poller: PollerInfo) => RecordStartResult | undefined): StartLedger {
  const started = new Set<string>()
  const calls = new Map<string, number>()
  return {
    started,
    calls,
    async recordTaskStarted(task: Task, poller: PollerInfo): Promise<RecordStartResult> {
      const call = (calls.get(task.jobId) ?? 0) + 1
      calls.set(task.jobId, call)
      const scripted = script?.(task.jobId, call, poller)
      if (scripted !== undefined) return scripted
      if (started.has(task.jobId)) return { kind: 'already-started' }
      started.add(task.jobId)
      return { kind: 'started', response: { jobId: task.jobId } }
    },
  }
}
