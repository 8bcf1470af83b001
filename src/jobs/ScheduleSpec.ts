/**
 * ScheduleSpec — the two schedule spec forms of the job contract and their occurrences:
 * `@every <n>s|m|h` (n a positive integer) and 5-field cron (minute hour day month weekday),
 * parsed by croner, read in UTC or in the schedule's IANA time zone (so `0 9 * * *` in
 * `Europe/Paris` fires at 09:00 Paris time through daylight-saving changes). Anything else is a
 * typed `InvalidSpec { spec }`; a time zone on an `@every` spec is `InvalidInput`.
 *
 * Occurrences are a pure function of the spec, the schedule's anchor and the last occurrence
 * fired: `@every` fires at anchor + k·interval (k ≥ 1); cron at its matching minutes after the
 * anchor. So any host computes the same occurrences, and exactly-once needs only the last-fired
 * compare-and-set in the store.
 *
 * Does not: read a clock — callers pass now; `new Date(ms)` only converts their milliseconds.
 */
import { Cron } from 'croner'
import { InvalidInput, InvalidSpec } from '../domain/errors.ts'

/** A parsed spec. */
export type ScheduleSpec = { readonly kind: 'every'; readonly intervalMs: number } | { readonly kind: 'cron'; readonly cron: Cron }

const everyPattern = /^@every\s+([1-9][0-9]{0,8})(s|m|h)$/
const unitMs = { s: 1_000, m: 60_000, h: 3_600_000 } as const

/**
 * Parses `spec`; throws `InvalidSpec` for anything but `@every <n>s|m|h` or 5-field cron.
 * `timezone` (an IANA name, already validated) applies to cron only.
 */
export function parseScheduleSpec(spec: unknown, timezone: string | null = null, timezoneField = 'options.timezone'): ScheduleSpec {
  if (typeof spec !== 'string') throw new InvalidSpec({ spec: String(spec), reason: 'must be a string' })
  const trimmed = spec.trim()
  if (trimmed.startsWith('@')) {
    const match = everyPattern.exec(trimmed)
    if (match === null) throw new InvalidSpec({ spec, reason: 'must be "@every <n>s", "@every <n>m" or "@every <n>h" with n a positive integer' })
    if (timezone !== null) throw new InvalidInput({ field: timezoneField, reason: 'applies to cron specs only (an @every interval has no time of day)' })
    return { kind: 'every', intervalMs: Number(match[1]) * unitMs[match[2] as keyof typeof unitMs] }
  }
  try {
    // No callback: croner only computes runs, it schedules nothing.
    return { kind: 'cron', cron: new Cron(trimmed, { mode: '5-part', timezone: timezone ?? 'UTC' }) }
  } catch (error) {
    throw new InvalidSpec({ spec, reason: error instanceof Error ? error.message : String(error) })
  }
}

/**
 * Occurrences after `lastFiredMs` (or the anchor when nothing fired yet) up to and including
 * `nowMs`, at most `limit`, ascending.
 */
export function occurrencesOf(spec: ScheduleSpec, anchorMs: number, lastFiredMs: number | null, nowMs: number, limit: number): number[] {
  const after = lastFiredMs ?? anchorMs
  const times: number[] = []
  if (spec.kind === 'every') {
    for (let k = Math.floor((after - anchorMs) / spec.intervalMs) + 1; times.length < limit; k++) {
      const at = anchorMs + k * spec.intervalMs
      if (at > nowMs) break
      if (at > after) times.push(at)
    }
    return times
  }
  for (let at = after; times.length < limit; ) {
    const next = spec.cron.nextRun(new Date(at))
    if (next === null || next.getTime() > nowMs) break
    at = next.getTime()
    times.push(at)
  }
  return times
}

/** The first occurrence after `lastFiredMs` (or the anchor when nothing fired yet); null when the spec has none. */
export function nextOccurrence(spec: ScheduleSpec, anchorMs: number, lastFiredMs: number | null): number | null {
  return occurrencesOf(spec, anchorMs, lastFiredMs, Number.MAX_SAFE_INTEGER, 1)[0] ?? null
}
