/**
 * After close, on PostgreSQL (a pool the engine owns, so the driver really closes): every engine,
 * queue and job-handle method refuses with a non-retryable `ShuttingDown` (closedEngine.ts).
 */
import { describe, it } from 'vitest'
import { open } from '../src/index.ts'
import { checkClosedRefusals } from './closedEngine.ts'
import { freshDatabase } from './harness/database.ts'

describe('a closed engine refuses everything with ShuttingDown, not retryable', () => {
  it('postgres', async () => {
    const databaseUrl = await freshDatabase('closed_engine')
    await checkClosedRefusals(await open({ store: { databaseUrl }, seed: 3, hostId: 'closed-postgres' }))
  })
})
