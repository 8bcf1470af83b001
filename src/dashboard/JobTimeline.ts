/**
 * JobTimeline — a job's life as the store keeps it, in the order it happened: its enqueue (or
 * its return from dead storage by a retry, attempt 0 in its claims), each attempt's claim, each attempt's error with the time its
 * retry was due, the claims that lapsed with no handler's word, its latest progress report, its
 * death, and what it waits for now (the next due time, or the running claim's deadline).
 *
 * What it is built from: the row's times, `claims` and `attemptErrors` (each the last
 * `jobClaimsKept` / `jobAttemptErrorsKept`, so a long life shows its latest attempts and says
 * that earlier ones were not kept), `progressAtMs`, `diedAtMs` and `lastError`. A claim of
 * attempt n with no error of attempt n before the next claim (or the death) lapsed: no handler
 * settled it before its deadline. Claims and errors are read in the order the store wrote them,
 * not sorted by time, so a life lived within one millisecond keeps its order. An acked or cancelled job is deleted, so no timeline ever ends
 * in completion or cancel: its page is gone (404).
 *
 * Invariants: pure (no store, no clock: `nowMs` comes in); every text goes out through `html`.
 * Does not: read the store or render anything but the timeline section.
 */
import type { AttemptError, ClaimEntry, JobRecord } from '../persistence/jobs/JobStore.ts'
import { deadReasonExpired } from '../domain/JobRules.ts'
import { jobClaimsKept } from '../kernel/Limits.ts'
import { type Html, html } from './Html.ts'
import { duration, instant } from './Layout.ts'

/** What happened at one point of a job's life. */
export type TimelineKind = 'earlier' | 'enqueued' | 'revived' | 'lapsed' | 'claimed' | 'progress' | 'retried' | 'failed' | 'died' | 'due'

/** One entry of a job's timeline. */
export interface TimelineEntry {
  readonly kind: TimelineKind
  /** The attempt it belongs to (0: the enqueue, or the return from dead). */
  readonly attempt: number
  /** When, epoch ms; with `by`, no later than this (a lapse is known only by what came after it). */
  readonly atMs: number
  readonly by?: boolean
  /** What happened, in words. */
  readonly text: string
  /** The handler's error or the progress value, shown as preformatted text. */
  readonly detail?: string
}

// The claim's error: the next unread attempt error, when it is this claim's attempt and was
// recorded at or after the claim. Both lists are in the order they were written and a claim has
// at most one error, so one pass reads them side by side.
const errorOf = (errors: ReadonlyArray<AttemptError>, next: number, claim: ClaimEntry): AttemptError | undefined => {
  const error = errors[next]
  return error !== undefined && error.attempt === claim.attempt && error.atMs >= claim.atMs ? error : undefined
}

// An attempt's error: a retry with the time it was due, or the last word before a death.
function errorEntry(error: AttemptError): TimelineEntry {
  const about = { attempt: error.attempt, atMs: error.atMs, detail: error.error }
  if (error.retryAtMs !== undefined) {
    return { ...about, kind: 'retried', text: `attempt ${error.attempt} failed; its retry was due at ${instant(error.retryAtMs)} (after ${duration(error.retryAtMs - error.atMs)})` }
  }
  return { ...about, kind: 'failed', text: `attempt ${error.attempt} failed` }
}

// The running claim's words: its deadline ahead, or passed with no new claim yet.
function runningText(job: JobRecord, nowMs: number): string {
  const deadline = job.deadlineMs
  if (deadline === null) return ''
  return deadline > nowMs ? ` — running, its claim deadline in ${duration(deadline - nowMs)}` : ` — its claim lapsed at ${instant(deadline)}`
}

// The end of a claim no handler settled: the next entry's time (a claim, a return from dead), or
// the death at the budget; null while it runs, or when the sweep killed it as expired.
function lapseMs(job: JobRecord, next: ClaimEntry | undefined): number | null {
  if (next !== undefined) return next.atMs
  return job.state === 'dead' && job.lastError !== deadReasonExpired ? job.diedAtMs : null
}

/**
 * The timeline of `job` as of `nowMs`, in the order things happened: the store's claims and
 * attempt errors read side by side (each in write order, so a life lived within one millisecond
 * keeps its order), the latest progress report after the claim it came in, then the death or
 * what the job waits for.
 */
export function jobTimeline(job: JobRecord, nowMs: number): ReadonlyArray<TimelineEntry> {
  const claims = job.claims ?? []
  const errors = job.attemptErrors
  const entries: TimelineEntry[] = []
  // A job retried from dead was created again: its first enqueue is not kept.
  if (!claims.some((claim) => claim.attempt === 0)) {
    const delayed = job.runAtMs > job.createdAtMs && claims.length === 0
    entries.push({ kind: 'enqueued', attempt: 0, atMs: job.createdAtMs, text: delayed ? `enqueued, due at ${instant(job.runAtMs)}` : 'enqueued' })
  }
  let nextError = 0
  const firstClaimMs = claims[0]?.atMs ?? Number.POSITIVE_INFINITY
  // Errors older than every kept claim: their claims were dropped by the bound.
  const orphans: AttemptError[] = []
  while (nextError < errors.length && (errors[nextError] as AttemptError).atMs < firstClaimMs) orphans.push(errors[nextError++] as AttemptError)
  if ((claims[0]?.attempt ?? 1) > 1 || orphans.length > 0) {
    const atMs = orphans[0]?.atMs ?? claims[0]?.atMs ?? job.createdAtMs
    entries.push({ kind: 'earlier', attempt: 0, atMs, by: true, text: `earlier attempts not kept (a job keeps its last ${jobClaimsKept} claims and errors)` })
  }
  entries.push(...orphans.map(errorEntry))
  // The claim the latest progress came in: the last one made at or before it.
  const progressMs = job.progress === null ? null : (job.progressAtMs ?? null)
  const progressClaim = progressMs === null ? -1 : claims.findLastIndex((claim) => claim.attempt > 0 && claim.atMs <= progressMs)
  claims.forEach((claim, index) => {
    if (claim.attempt === 0) {
      entries.push({ kind: 'revived', attempt: 0, atMs: claim.atMs, text: 'retried from dead: pending again, its attempts counted from 0' })
      return
    }
    const isCurrent = index === claims.length - 1 && job.state === 'processing'
    entries.push({ kind: 'claimed', attempt: claim.attempt, atMs: claim.atMs, text: `attempt ${claim.attempt} claimed by a worker${isCurrent ? runningText(job, nowMs) : ''}` })
    if (index === progressClaim && progressMs !== null) {
      entries.push({ kind: 'progress', attempt: claim.attempt, atMs: progressMs, text: 'progress reported (the latest report)', detail: JSON.stringify(job.progress) })
    }
    const error = errorOf(errors, nextError, claim)
    if (error !== undefined) {
      nextError++
      entries.push(errorEntry(error))
      return
    }
    const endMs = isCurrent ? null : lapseMs(job, claims[index + 1])
    if (endMs !== null) entries.push({ kind: 'lapsed', attempt: claim.attempt, atMs: endMs, by: true, text: `attempt ${claim.attempt}'s claim lapsed: no handler settled it before its deadline` })
  })
  // Errors no kept claim explains (a row written before claims were kept) follow in their order.
  for (; nextError < errors.length; nextError++) entries.push(errorEntry(errors[nextError] as AttemptError))
  if (job.state === 'dead' && job.diedAtMs !== null) entries.push({ kind: 'died', attempt: job.attempts, atMs: job.diedAtMs, text: `dead: ${job.lastError ?? ''}` })
  if (job.state === 'pending') {
    const text = job.runAtMs > nowMs ? `next attempt due (in ${duration(job.runAtMs - nowMs)})` : 'due: waiting for a worker'
    entries.push({ kind: 'due', attempt: job.attempts, atMs: job.runAtMs, text })
  }
  return entries
}

/** The job page's timeline section. */
export function timelineSection(job: JobRecord, nowMs: number): Html {
  const entries = jobTimeline(job, nowMs)
  const firstMs = entries[0]?.atMs ?? job.createdAtMs
  const rows = entries.map(
    (entry) =>
      html`<tr class="timeline-${entry.kind}"><td>${entry.by === true ? 'by ' : ''}${instant(entry.atMs)}</td><td class="num muted">+${duration(entry.atMs - firstMs)}</td><td><span class="event event-${entry.kind}">${entry.kind}</span> ${entry.text}${entry.detail === undefined ? '' : html`<pre class="attempt-error">${entry.detail}</pre>`}</td></tr>`,
  )
  return html`<h2>Timeline</h2><table id="timeline"><thead><tr><th>at</th><th class="num">since</th><th>event</th></tr></thead><tbody>${rows}</tbody></table>
<p class="muted">Built from what the store keeps: the job's times, its last ${jobClaimsKept} claims and attempt errors, its latest progress. A job that is acked or cancelled is deleted with its timeline.</p>`
}
