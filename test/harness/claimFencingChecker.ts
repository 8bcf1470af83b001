/**
 * claimFencingChecker — judges recorded claim races (claimFencingRace.ts), apart from the code
 * that ran them: it reads only the ledger of A's statements and the job rows B read.
 *
 * Soundness: B writes no job row, and every job is claimed at one time well inside its
 * visibility, so once B's acquire has committed no job row of the race may change at all: the
 * rows B read right after its acquire must equal the final rows (any difference is a claim or an
 * ack under A's old range that committed after the acquire). Nothing here can fire on a correct
 * store; a claim committing between B's acquire and B's read goes unseen (the check is sound,
 * not complete), which is why the race repeats and why an unfenced owner is caught anyway.
 *
 * Also checked, statement by statement: a statement A saw succeed wrote what it answered (each
 * claimed job holds its token, each acked job is gone); a refused one was refused with
 * OwnershipLost and wrote nothing (none of its tokens on any row, its riding ack not applied).
 */
import type { ClaimRef } from '../../src/persistence/jobs/JobStore.ts'

/** A queue's live job rows: id → what a claim changes. */
export type JobRows = ReadonlyMap<string, { readonly state: string; readonly claimToken: string | null; readonly attempts: number }>

/** What one of A's statements reported (the ledger). */
export type ClaimStatement =
  | {
      readonly ok: true
      readonly claimTokens: ReadonlyArray<string>
      readonly acks: ReadonlyArray<ClaimRef>
      readonly claimed: ReadonlyArray<ClaimRef>
      readonly acked: ReadonlyArray<string>
    }
  | { readonly ok: false; readonly claimTokens: ReadonlyArray<string>; readonly acks: ReadonlyArray<ClaimRef>; readonly errorTag: string; readonly detail: string }

/** Everything observed in one race. */
export interface ClaimRaceRecord {
  readonly variant: 'claimDue' | 'ackAndClaimDue'
  readonly iteration: number
  readonly queue: string
  /** A's range (its fence) and B's, from their acquires. */
  readonly fenceRangeId: number
  readonly acquiredRangeId: number
  /** Jobs A held before the race, acked by its statements. */
  readonly held: ReadonlyArray<ClaimRef>
  /** Rows B read right after its acquire returned, and after every statement of A settled. */
  readonly afterAcquire: JobRows
  readonly statements: ReadonlyArray<ClaimStatement>
  readonly finalRows: JobRows
}

/** Returns one line per violation (empty when the race was fenced correctly). */
export function checkClaimRace(record: ClaimRaceRecord): string[] {
  const violations: string[] = []
  const fail = (message: string) => violations.push(`${record.variant} #${record.iteration}: ${message}`)
  if (record.acquiredRangeId !== record.fenceRangeId + 1) fail(`B acquired range ${record.acquiredRangeId}, not ${record.fenceRangeId + 1}`)

  // 1. Nothing changed after B's acquire.
  for (const [id, row] of record.finalRows) {
    const seen = record.afterAcquire.get(id)
    if (seen === undefined) fail(`job ${id} appeared after B's acquire`)
    else if (seen.state !== row.state || seen.claimToken !== row.claimToken || seen.attempts !== row.attempts) {
      fail(`job ${id} changed after B's acquire: ${JSON.stringify(seen)} → ${JSON.stringify(row)}`)
    }
  }
  for (const id of record.afterAcquire.keys()) if (!record.finalRows.has(id)) fail(`job ${id} was deleted after B's acquire`)

  // 2. Each statement wrote exactly what it answered: all of it, or nothing.
  const tokensOnRows = new Set([...record.finalRows.values()].map((row) => row.claimToken))
  record.statements.forEach((statement, index) => {
    if (statement.ok) {
      for (const claim of statement.claimed) {
        if (record.finalRows.get(claim.id)?.claimToken !== claim.claimToken) fail(`statement ${index} claimed ${claim.id} with ${claim.claimToken}, which the row does not hold`)
      }
      for (const id of statement.acked) if (record.finalRows.has(id)) fail(`statement ${index} acked ${id}, which is still there`)
      return
    }
    if (statement.errorTag !== 'OwnershipLost') fail(`statement ${index} failed with ${statement.errorTag}, not OwnershipLost: ${statement.detail}`)
    for (const token of statement.claimTokens) if (tokensOnRows.has(token)) fail(`refused statement ${index}'s token ${token} is on a row`)
    for (const ack of statement.acks) {
      if (record.finalRows.get(ack.id)?.claimToken !== ack.claimToken) fail(`refused statement ${index}'s riding ack of ${ack.id} was applied`)
    }
  })
  return violations
}
