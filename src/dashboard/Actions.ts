/**
 * Actions — what an operator can do from the dashboard: retry dead jobs, cancel live ones, delete
 * either, on one job, on a selection or on every dead job of a queue, enqueue a job from a form,
 * and pause or resume a queue. Each answers what it did, job by job counted (`ActionReport`).
 *
 * Invariants: every field is validated before anything is written (`InvalidInput` naming the
 * field: a bad id, an unknown action, a payload that is not JSON); an action touches at most
 * `dashboardActionJobsMax` jobs per request and says when more remain; an action that found none
 * of the jobs it named fails with `JobNotFound`, so a single stale link answers 404, not "0 done".
 *
 * Does not: check auth or the CSRF token (the handler does before calling in).
 */
import { Data } from 'effect'
import { InvalidInput } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import { dashboardActionJobsMax } from '../kernel/Limits.ts'
import type { JobQueue } from '../jobs/JobQueue.ts'
import type { Matchbox } from '../jobs/Matchbox.ts'
import { outboxPrefix } from '../jobs/QueueOptions.ts'
import type { DashboardReads } from '../persistence/dashboard/DashboardReads.ts'
import type { ActionReport } from './SystemPages.ts'

/** None of the jobs an action named is in a state it applies to. */
export class JobNotFound extends Data.TaggedError('JobNotFound')<{ readonly message: string }> {}

/** The actions a form may ask for. */
export const actionNames = ['retry', 'cancel', 'delete', 'retry-all-dead', 'delete-all-dead', 'enqueue', 'pause', 'resume'] as const

/** One of `actionNames`. */
export type ActionName = (typeof actionNames)[number]

/** The handle of queue `name`, outboxes included. */
export function queueHandle(mb: Matchbox, name: string): JobQueue {
  return name.startsWith(outboxPrefix) ? mb.outbox(name.slice(outboxPrefix.length)) : mb.queue(name)
}

function field(form: URLSearchParams, name: string): string {
  return validateName(name, form.get(name) ?? '')
}

function idsOf(form: URLSearchParams): string[] {
  const ids = [...new Set(form.getAll('ids'))]
  if (ids.length === 0) throw new InvalidInput({ field: 'ids', reason: 'select at least one job' })
  if (ids.length > dashboardActionJobsMax) throw new InvalidInput({ field: 'ids', reason: `at most ${dashboardActionJobsMax} jobs per action` })
  return ids.map((id, index) => validateName(`ids[${index}]`, id))
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`

function report(title: string, queue: string, state: string, done: number, verb: string, skipped: ReadonlyArray<string>, skippedWhy: string, more = false): ActionReport {
  if (done === 0 && skipped.length > 0) throw new JobNotFound({ message: `${skippedWhy}: ${skipped.join(', ')}` })
  const lines = [`${verb} ${plural(done, 'job')} in ${queue}.`]
  if (skipped.length > 0) lines.push(`${skippedWhy}: ${skipped.join(', ')}`)
  if (more) lines.push(`More remain: this action handles at most ${dashboardActionJobsMax} jobs at a time; run it again.`)
  return { title, lines, backPath: `/queues/${encodeURIComponent(queue)}?state=${state}` }
}

async function retry(queue: JobQueue, ids: ReadonlyArray<string>, title: string, more = false): Promise<ActionReport> {
  const skipped: string[] = []
  let done = 0
  for (const id of ids) {
    const outcome = await queue.retryDead(id)
    if (outcome.retried) done++
    else skipped.push(outcome.reason === 'key-taken' ? `${id} (its key is held by live job ${outcome.liveId})` : id)
  }
  return report(title, queue.name, 'dead', done, 'Retried', skipped, 'Not retried (not dead, or its key is held)', more)
}

async function remove(reads: DashboardReads, queue: JobQueue, ids: ReadonlyArray<string>, title: string, more = false): Promise<ActionReport> {
  let done = 0
  const dead: string[] = []
  for (const id of ids) {
    if (await queue.cancel(id)) done++
    else dead.push(id)
  }
  const deleted = dead.length === 0 ? 0 : await reads.deleteDead({ queue: queue.name, ids: dead })
  done += deleted
  const missing = deleted === dead.length ? [] : await missingOf(queue, dead)
  return report(title, queue.name, 'dead', done, 'Deleted', missing, 'Not found', more)
}

async function missingOf(queue: JobQueue, ids: ReadonlyArray<string>): Promise<string[]> {
  const missing: string[] = []
  for (const id of ids) if ((await queue.getJob(id)) === null) missing.push(id)
  return missing
}

async function cancel(queue: JobQueue, ids: ReadonlyArray<string>): Promise<ActionReport> {
  const skipped: string[] = []
  let done = 0
  for (const id of ids) {
    if (await queue.cancel(id)) done++
    else skipped.push(id)
  }
  return report('Cancelled', queue.name, 'pending', done, 'Cancelled', skipped, 'Not live (dead, finished or unknown)')
}

function enqueueOptions(form: URLSearchParams): { priority?: number; delayMs?: number; key?: string } {
  const number = (name: string, min: number, max: number): number | undefined => {
    const text = (form.get(name) ?? '').trim()
    if (text === '') return undefined
    const value = Number(text)
    if (!Number.isInteger(value) || value < min || value > max) throw new InvalidInput({ field: name, reason: `must be an integer in ${min}…${max}` })
    return value
  }
  const priority = number('priority', 0, 9)
  const delaySeconds = number('delaySeconds', 0, 365 * 86_400)
  const key = (form.get('key') ?? '').trim()
  return { ...(priority === undefined ? {} : { priority }), ...(delaySeconds === undefined || delaySeconds === 0 ? {} : { delayMs: delaySeconds * 1_000 }), ...(key === '' ? {} : { key }) }
}

async function enqueue(mb: Matchbox, form: URLSearchParams): Promise<ActionReport> {
  const queue = queueHandle(mb, field(form, 'queue'))
  let payload: unknown
  try {
    payload = JSON.parse(form.get('payload') ?? '')
  } catch (error) {
    throw new InvalidInput({ field: 'payload', reason: `is not JSON (${error instanceof Error ? error.message : String(error)})` })
  }
  const id = await queue.enqueue(payload as never, enqueueOptions(form))
  return { title: 'Enqueued', lines: [`Enqueued 1 job in ${queue.name}: ${id}.`], backPath: `/queues/${encodeURIComponent(queue.name)}/jobs/${encodeURIComponent(id)}` }
}

/** Performs the action a posted form asks for. */
export async function performAction(mb: Matchbox, reads: DashboardReads, form: URLSearchParams): Promise<ActionReport> {
  const action = form.get('action') ?? ''
  if (!(actionNames as ReadonlyArray<string>).includes(action)) throw new InvalidInput({ field: 'action', reason: `must be one of ${actionNames.join(', ')}` })
  if (action === 'enqueue') return enqueue(mb, form)
  const queue = queueHandle(mb, field(form, 'queue'))
  switch (action as Exclude<ActionName, 'enqueue'>) {
    case 'pause':
    case 'resume': {
      const changed = action === 'pause' ? await queue.pause() : await queue.resume()
      const line = action === 'pause' ? (changed ? `Paused ${queue.name}: no engine claims its jobs until it is resumed; enqueues are still accepted.` : `${queue.name} was paused already.`) : changed ? `Resumed ${queue.name}: its jobs are delivered again.` : `${queue.name} was not paused.`
      return { title: action === 'pause' ? 'Paused' : 'Resumed', lines: [line], backPath: '/' }
    }
    case 'retry':
      return retry(queue, idsOf(form), 'Retried')
    case 'cancel':
      return cancel(queue, idsOf(form))
    case 'delete':
      return remove(reads, queue, idsOf(form), 'Deleted')
    case 'retry-all-dead':
    case 'delete-all-dead': {
      const ids = await reads.deadIds({ queue: queue.name, limit: dashboardActionJobsMax + 1 })
      const more = ids.length > dashboardActionJobsMax
      const batch = ids.slice(0, dashboardActionJobsMax)
      if (batch.length === 0) return { title: 'Nothing to do', lines: [`No dead jobs in ${queue.name}.`], backPath: `/queues/${encodeURIComponent(queue.name)}?state=dead` }
      return action === 'retry-all-dead' ? retry(queue, batch, 'Retried all dead', more) : remove(reads, queue, batch, 'Deleted all dead', more)
    }
  }
}
