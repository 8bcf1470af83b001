/**
 * ScriptedHistory — the Matching world's History: it keeps the shared record (core/HistoryRecord.ts)
 * of which jobs started or became obsolete, answering through the IoGate (so slow answers are
 * just late ones) and rejecting on a schedule drawn from the seed.
 */
import type { History, PollerInfo, RecordStartResult } from '../../src/actors/History.ts'
import type { Task } from '../../src/domain/Task.ts'
import type { Random } from '../../src/kernel/Random.ts'
import type { HistoryRecord } from '../core/HistoryRecord.ts'
import type { IoGate } from '../core/IoGate.ts'

/** How often History rejects; the world turns these to 0 for the liveness phase. */
export interface HistoryScript {
  retryableChance: number
  obsoleteChance: number
  /** History claims the job was already started elsewhere (it records it as started). */
  alreadyStartedChance: number
}

/** A host's History client: calls park in the gate; the shared record decides. */
export function makeScriptedHistory(hostId: string, gate: IoGate, record: HistoryRecord, script: HistoryScript, random: Random): History {
  return {
    recordTaskStarted(task: Task, poller: PollerInfo): Promise<RecordStartResult> {
      return gate.park(hostId, `history.start ${task.jobId} for ${poller.identity}`, false, async () => {
        let answer: RecordStartResult
        if (record.obsolete.has(task.jobId)) answer = { kind: 'obsolete' }
        else if (record.started.has(task.jobId)) {
          record.started.set(task.jobId, (record.started.get(task.jobId) ?? 0) + 1)
          answer = { kind: 'already-started' }
        } else if (random.chance(script.retryableChance)) {
          record.injected['history.retryable']++
          answer = { kind: 'retryable', reason: 'scripted rejection' }
        } else if (random.chance(script.alreadyStartedChance)) {
          record.injected['history.alreadyStarted']++
          record.started.set(task.jobId, 1)
          answer = { kind: 'already-started' }
        } else if (random.chance(script.obsoleteChance)) {
          record.injected['history.obsolete']++
          record.obsolete.add(task.jobId)
          answer = { kind: 'obsolete' }
        } else {
          record.started.set(task.jobId, 1)
          answer = { kind: 'started', response: { jobId: task.jobId, by: poller.identity } }
        }
        record.answers[answer.kind]++
        return answer
      })
    },
  }
}
