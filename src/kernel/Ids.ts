/**
 * Ids — reproducible identifiers for actors, delayed events, hosts and jobs.
 *
 * Owns: id generation from a counter (for machine actor ids and delayed-event ids, so traces
 * are byte-for-byte reproducible) and from a seeded Random (for job ids, which must not collide
 * across hosts sharing a database).
 *
 * Does not: read the clock or `Math.random`; uniqueness across processes comes from the seed,
 * which a production runtime draws from entropy in the kernel.
 */
import type { Random } from './Random.ts'

/** Makes ids of the form `${prefix}-${n}`, counting from 1 per prefix. */
export class Ids {
  readonly #counters = new Map<string, number>()

  /** The next id for `prefix`: `poll-1`, `poll-2`, … */
  next(prefix: string): string {
    const n = (this.#counters.get(prefix) ?? 0) + 1
    this.#counters.set(prefix, n)
    return `${prefix}-${n}`
  }
}

const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz'

/** A 20-character base-36 id drawn from `random` (≈103 bits). */
export function randomId(random: Random): string {
  let id = ''
  for (let i = 0; i < 20; i++) id += alphabet[random.int(0, alphabet.length - 1)]
  return id
}

/**
 * A job id: the creation time in whole ms, 9 base-36 characters, then 15 characters drawn from
 * `random` (≈77 bits), 24 in all. Ids of later milliseconds sort after earlier ones, so a store's
 * index on job ids grows at its right edge instead of splitting pages all over (about a tenth
 * off a batch insert into a 45,000-job table on PostgreSQL); the random part keeps ids of one
 * millisecond, and of several engines, apart.
 */
export function jobId(random: Random, nowMs: number): string {
  return jobIdOf(random, jobIdTime(nowMs))
}

/** The time part of the ids `jobId` draws at `nowMs`, for a batch that draws many at one time. */
export function jobIdTime(nowMs: number): string {
  return Math.max(0, Math.floor(nowMs)).toString(36).padStart(9, '0')
}

const alphabetCodes = Array.from(alphabet, (character) => character.charCodeAt(0))
// The random part: its digits drawn, then their character codes (one flat string, no concatenations).
const drawnCodes: number[] = Array.from({ length: 15 }, () => 0)

/** A job id of time part `time` (`jobIdTime`): the id `jobId` draws, from the same draws. */
export function jobIdOf(random: Random, time: string): string {
  random.fillInts(drawnCodes, 0, alphabet.length - 1)
  for (let i = 0; i < drawnCodes.length; i++) drawnCodes[i] = alphabetCodes[drawnCodes[i] as number] as number
  return time + String.fromCharCode.apply(null, drawnCodes)
}
