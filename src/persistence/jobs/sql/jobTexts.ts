/**
 * jobTexts — the job statements whose text depends on the shape of the call, chosen so that
 * PostgreSQL keeps one plan per text (a prepared statement is planned for its values five times,
 * then on a generic plan only if that looks as cheap; otherwise every execution is planned
 * afresh, which on a one-job statement costs more than running it):
 *
 * - `claimDue` and `ackAndClaimDue`: one text per token count, the count written in as the head's
 *   LIMIT (jobSql.ts's claimDueSql), made on first use, at most `jobBatchSizeMax` of each (of
 *   `ackAndClaimDue`, one set for a single ack and one for several, as for acks below, each in
 *   both head forms, jobSql.ts's `HeadForm`);
 * - `takeDue` and `nextDue`: one text per queue filter (every queue, one, several);
 * - acks: one claim runs the one-job statement, whose plan is an index probe; a batch's join
 *   to its arrays is planned at every execution, a cost its jobs share.
 *
 * Each has a fenced form (claimFenceSql.ts), its own text with the fence's two parameters after
 * the others, made on first use as well, so an unfenced call runs exactly the text it ran before.
 *
 * Each text is prepared once per connection by the driver.
 */
import type { Schema } from '../../sql/Schema.ts'
import type { ClaimFence, ClaimRef } from '../JobStore.ts'
import { fenceValues } from './claimFenceSql.ts'
import * as jobSql from './jobSql.ts'

/** The shape-chosen texts of one schema's job store. */
export interface JobTexts {
  /** The statement and parameters claiming with `claimTokens` (at least one), fenced by `fence` unless it is null, guarded as `guard` says. */
  claimDue(queue: string, claimTokens: ReadonlyArray<string>, nowMs: number, fence: ClaimFence | null, guard: jobSql.ClaimGuard): [string, unknown[]]
  /** The statement and parameters acking `acks` (at least one) and claiming with `claimTokens` (at least one), fenced unless `fence` is null, guarded as `guard` says, reading the heads `heads` says. */
  ackAndClaimDue(
    queue: string,
    claimTokens: ReadonlyArray<string>,
    nowMs: number,
    acks: ReadonlyArray<ClaimRef>,
    fence: ClaimFence | null,
    guard: jobSql.ClaimGuard,
    heads: jobSql.HeadForm,
  ): [string, unknown[]]
  takeDue(queues: ReadonlyArray<string> | null): string
  nextDue(queues: ReadonlyArray<string> | null): string
  /** The statement and parameters acking `claims` (at least one) at `nowMs`. */
  ack(claims: ReadonlyArray<ClaimRef>, nowMs: number): [string, unknown[]]
}

/** Makes the texts of `schema`'s job store. */
export function makeJobTexts(schema: Schema): JobTexts {
  const byCount = (make: (schema: Schema, tokens: number) => string): ((tokens: number) => string) => {
    const texts = new Map<number, string>()
    return (tokens) => {
      let text = texts.get(tokens)
      if (text === undefined) {
        text = make(schema, tokens)
        texts.set(tokens, text)
      }
      return text
    }
  }
  const byFilter = (make: (schema: Schema, filter: jobSql.QueueFilter) => string): ((queues: ReadonlyArray<string> | null) => string) => {
    const every = make(schema, 'every')
    const one = make(schema, 'one')
    const several = make(schema, 'several')
    return (queues) => (queues === null ? every : queues.length === 1 ? one : several)
  }
  const ackOne = jobSql.ackSql(schema)
  const ackBatch = jobSql.ackBatchSql(schema)
  // Each claim text in both guards (jobSql.ts's `ClaimGuard`), and each ack-and-claim text in both head forms (`HeadForm`).
  const guarded = (make: (guard: jobSql.ClaimGuard) => (tokens: number) => string) => ({ admit: make('admit'), keyless: make('keyless') })
  const headed = (make: (heads: jobSql.HeadForm, guard: jobSql.ClaimGuard) => (tokens: number) => string) => ({
    full: guarded((guard) => make('full', guard)),
    lean: guarded((guard) => make('lean', guard)),
  })
  const claimDue = guarded((guard) => byCount((schema, tokens) => jobSql.claimDueSql(schema, tokens, false, guard)))
  const claimDueFenced = guarded((guard) => byCount((schema, tokens) => jobSql.claimDueSql(schema, tokens, true, guard)))
  const ackOneAndClaimDue = headed((heads, guard) => byCount((schema, tokens) => jobSql.ackAndClaimDueSql(schema, tokens, true, false, guard, heads)))
  const ackSeveralAndClaimDue = headed((heads, guard) => byCount((schema, tokens) => jobSql.ackAndClaimDueSql(schema, tokens, false, false, guard, heads)))
  const ackOneAndClaimDueFenced = headed((heads, guard) => byCount((schema, tokens) => jobSql.ackAndClaimDueSql(schema, tokens, true, true, guard, heads)))
  const ackSeveralAndClaimDueFenced = headed((heads, guard) => byCount((schema, tokens) => jobSql.ackAndClaimDueSql(schema, tokens, false, true, guard, heads)))
  return {
    claimDue(queue, claimTokens, nowMs, fence, guard) {
      if (fence === null) return [claimDue[guard](claimTokens.length), [queue, claimTokens, nowMs]]
      return [claimDueFenced[guard](claimTokens.length), [queue, claimTokens, nowMs, ...fenceValues(fence)]]
    },
    ackAndClaimDue(queue, claimTokens, nowMs, acks, fence, guard, heads) {
      const [only] = acks
      const one = acks.length === 1 && only !== undefined
      const values = one ? [queue, claimTokens, nowMs, only.id, only.claimToken] : [queue, claimTokens, nowMs, acks.map((ack) => ack.id), acks.map((ack) => ack.claimToken)]
      if (fence === null) return [(one ? ackOneAndClaimDue : ackSeveralAndClaimDue)[heads][guard](claimTokens.length), values]
      return [(one ? ackOneAndClaimDueFenced : ackSeveralAndClaimDueFenced)[heads][guard](claimTokens.length), [...values, ...fenceValues(fence)]]
    },
    takeDue: byFilter(jobSql.takeDueSql),
    nextDue: byFilter(jobSql.nextDueSql),
    ack(claims, nowMs) {
      const [only] = claims
      if (claims.length === 1 && only !== undefined) return [ackOne, [only.id, only.claimToken, nowMs]]
      return [ackBatch, [claims.map((claim) => claim.id), claims.map((claim) => claim.claimToken), nowMs]]
    },
  }
}
