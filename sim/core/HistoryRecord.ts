/**
 * HistoryRecord — which jobs a world's History started or declared obsolete: the at-least-once
 * checker's source of truth (core/Checkers.ts), shared by every workload. A task counts as
 * delivered once History started it or declared it obsolete. Matching's scripted History
 * (sim/matching/ScriptedHistory.ts) writes it as it answers; the jobs world writes it from the
 * job store's claims and expiries.
 */
import type { RecordStartResult } from '../../src/actors/History.ts'

/** The shared History state. */
export class HistoryRecord {
  /** Job ids started, with how many times a start was recorded (duplicates are allowed). */
  readonly started = new Map<string, number>()
  readonly obsolete = new Set<string>()
  /** Answers given, by kind, for the summary. */
  readonly answers: Record<RecordStartResult['kind'], number> = { started: 0, 'already-started': 0, obsolete: 0, retryable: 0 }
  /** Answers the script injected (faults), as opposed to answers the record implied. */
  readonly injected = { 'history.retryable': 0, 'history.alreadyStarted': 0, 'history.obsolete': 0 }

  /** True once a job's delivery is handled (started or obsolete). */
  isHandled(jobId: string): boolean {
    return this.started.has(jobId) || this.obsolete.has(jobId)
  }
}
