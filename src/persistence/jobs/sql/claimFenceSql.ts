/**
 * claimFenceSql — the range fence of a claim statement on the SQL job store (JobStore.ts's
 * `ClaimFence`): the CTE that holds it, the predicate every write of a fenced statement joins to,
 * and the explanation of a refusal.
 *
 * How one statement fences, under READ COMMITTED and across connections. The statement's first
 * CTE, `fence`, selects the physical queue's row in `task_queues` WHERE its range id is the
 * fence's, FOR SHARE, and every write of the statement (the claim's UPDATE, the riding acks'
 * DELETE, the claimed insert) is gated on `EXISTS (SELECT 1 FROM fence)`, a one-time filter the
 * executor evaluates before it reads a single job row. An acquire is `INSERT … ON CONFLICT DO
 * UPDATE SET range_id = range_id + 1`, which locks the row it increments FOR NO KEY UPDATE (no key
 * column changes), and that mode conflicts with FOR SHARE. So either:
 * - the claim locks the row first: the acquire waits until the claim's transaction commits, so
 *   every claim under the old range committed before the new range exists; or
 * - the acquire locks it first: the claim waits for the acquire to commit, then re-reads the
 *   newest version of the row (PostgreSQL re-checks a locking clause's WHERE on the version it
 *   locks, not the statement's snapshot), finds the range moved, gets no `fence` row, and writes
 *   nothing.
 * FOR KEY SHARE would not do: it does not conflict with FOR NO KEY UPDATE, so an acquire could
 * commit under a claim in flight. A queue row created after the claim's snapshot is not seen (no
 * row: refused), and a queue never acquired has no row at all: refused too, as the contract says.
 * Claims among themselves take compatible share locks and do not wait for each other; an append
 * or checkpoint of the same physical queue (FOR NO KEY UPDATE) waits for a claim in flight and
 * the other way round, each for one statement.
 *
 * A fenced statement answers through `FROM fence LEFT JOIN …`: no row at all means the fence
 * was refused (nothing written); a row of nulls means the fence held and nothing was claimed.
 *
 * Does not: change any range (the Matching store's acquire does), or fence unfenced statements,
 * whose texts stay as they were (jobSql.ts builds both from one spelling).
 */
import { OwnershipLost, refusal } from '../../../domain/errors.ts'
import { encodeQueueKey } from '../../../domain/QueueKey.ts'
import type { Schema } from '../../sql/Schema.ts'
import { currentQueueSql } from '../../queues/sql/queueSql.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'
import type { ClaimFence } from '../JobStore.ts'

/** The parameter numbers of a fenced statement's queue key and range id (`$n` each). */
export interface FenceParams {
  readonly queueKey: string
  readonly rangeId: string
}

/** The `fence` CTE (see the file header): the physical queue's row at the fence's range, locked FOR SHARE. */
export function fenceCte(schema: Schema, params: FenceParams): string {
  return `fence AS MATERIALIZED (
  SELECT range_id FROM ${schema.quoted}.task_queues
  WHERE queue_key = ${params.queueKey}::text AND range_id = ${params.rangeId}::bigint
  FOR SHARE
)`
}

/** The gate of every write in a fenced statement. */
export const fenceHeld = 'EXISTS (SELECT 1 FROM fence)'

/** A fence as the two parameters of a fenced statement: the encoded queue key, the range id. */
export const fenceValues = (fence: ClaimFence): [string, number] => [encodeQueueKey(fence.queueKey), fence.rangeId]

/**
 * The `OwnershipLost` of a refused fenced statement, with the queue's range id now (read by
 * `read`, on the failure path only; the refusal itself came from the statement).
 */
export async function fenceRefusal(schema: Schema, fence: ClaimFence, read: (text: string, params: unknown[]) => Promise<ReadonlyArray<Record<string, unknown>>>): Promise<OwnershipLost> {
  const queue = encodeQueueKey(fence.queueKey)
  const [row] = await read(currentQueueSql(schema), [queue])
  const currentRangeId = row === undefined ? null : toSafeInteger(row.range_id, 'range_id')
  return refusal(() => new OwnershipLost({ queue, rangeId: fence.rangeId, currentRangeId }))
}
