/**
 * After close, on the memory and embedded stores: every engine, queue and job-handle method
 * refuses with a non-retryable `ShuttingDown` (closedEngine.ts); close twice is fine.
 */
import { describe, it } from 'vitest'
import { open } from '../src/index.ts'
import { checkClosedRefusals } from './closedEngine.ts'

describe('a closed engine refuses everything with ShuttingDown, not retryable', () => {
  it('memory', async () => {
    await checkClosedRefusals(await open({ store: 'memory', seed: 3, hostId: 'closed-memory' }))
  })
  it('embedded', async () => {
    await checkClosedRefusals(await open({ store: 'embedded', seed: 3, hostId: 'closed-embedded' }))
  })
})
