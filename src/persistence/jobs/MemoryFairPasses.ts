/**
 * MemoryFairPasses — which fairness key a job of the memory store takes its turn as, over the
 * store's last passes (queue → key → last pass), as the SQL store's enqueue statements decide it
 * (jobSql.ts's `fairPassCte`, fairBatchSql.ts).
 *
 * A keyed job takes its own key's turn. An unkeyed job takes the implicit key's turn (`''`, weight
 * 1) only in a queue that has the state of a real key: there the unkeyed jobs are one more key,
 * FIFO among themselves, so a tenant enqueueing behind an unkeyed backlog is not held up by all
 * of it. A queue without a real key's state draws no pass for an unkeyed job, which is ordered by
 * its due time as in a queue without keys. The implicit key's last pass is kept under `''`, a
 * name no caller's key can have (`validateName` refuses the empty name), so it is forgotten by
 * the sweep by the rule of every key and a queue whose real keys are all forgotten is without
 * keys again.
 *
 * Does not: draw the pass (MemoryClaimOrder.ts's `nextPass` reads the head for V) or hold any
 * state of its own.
 */
import { fairnessStride, type NewJob } from './JobStore.ts'

/** The implicit key's name in the last passes: the empty name, which no job's key can be. */
export const implicitFairnessKey = ''

/** Whether a queue's last passes (`undefined`: none) include a real key's, so its unkeyed jobs take turns. */
export function hasRealKey(passes: ReadonlyMap<string, number> | undefined): boolean {
  if (passes === undefined) return false
  for (const key of passes.keys()) if (key !== implicitFairnessKey) return true
  return false
}

/** The key whose turn a job takes, and that key's stride for it. */
export interface Turn {
  readonly key: string
  readonly stride: number
}

/** The turn `job` takes, or null when it draws no pass. */
export function turnOf(lastPasses: ReadonlyMap<string, ReadonlyMap<string, number>>, job: NewJob): Turn | null {
  if (job.fairnessKey !== undefined && job.fairnessKey !== null) return { key: job.fairnessKey, stride: fairnessStride(job.fairnessWeight ?? 1) }
  return hasRealKey(lastPasses.get(job.queue)) ? { key: implicitFairnessKey, stride: fairnessStride(1) } : null
}
