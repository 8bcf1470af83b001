/**
 * tableHistory — a History that records starts durably in the database under test, as a real
 * History does before it answers: `INSERT … ON CONFLICT DO NOTHING` into `crash_test.started`
 * decides `started` (the row is new) or `already-started` (it was there). Used by the crash
 * recovery child process and by the host that takes over after the kill, so "delivered at
 * least once" is a question the database answers after any crash.
 *
 * Does not: time out claims or schedule new attempts.
 */
import type pg from 'pg'
import type { History } from '../../src/actors/History.ts'

/** Creates the ledger table if it is missing (idempotent). */
export async function ensureStartedTable(pool: pg.Pool): Promise<void> {
  await pool.query('CREATE SCHEMA IF NOT EXISTS crash_test')
  await pool.query('CREATE TABLE IF NOT EXISTS crash_test.started (job_id text PRIMARY KEY, started_by text NOT NULL)')
}

/** A History over `crash_test.started`; `startedBy` names who recorded each start. */
export function makeTableHistory(pool: pg.Pool, startedBy: string): History {
  return {
    async recordTaskStarted(task) {
      const inserted = await pool.query('INSERT INTO crash_test.started (job_id, started_by) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING job_id', [task.jobId, startedBy])
      return inserted.rowCount === 1 ? { kind: 'started', response: { jobId: task.jobId } } : { kind: 'already-started' }
    },
  }
}

/** Job ids with a recorded start. */
export async function startedJobIds(pool: pg.Pool): Promise<Set<string>> {
  const { rows } = await pool.query<{ job_id: string }>('SELECT job_id FROM crash_test.started')
  return new Set(rows.map((row) => row.job_id))
}
