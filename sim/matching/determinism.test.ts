/**
 * Determinism: two runs of one seed produce the same trace, byte for byte, on each store — the
 * memory store, embedded PGlite, and PostgreSQL with one pool per host. `checkDeterminism`
 * compares the trace hashes and names the first line where the runs part.
 */
import { PGlite } from '@electric-sql/pglite'
import { beforeAll, describe, expect, it } from 'vitest'
import { freshDatabase } from '../../test/harness/database.ts'
import { checkDeterminism } from './Simulation.ts'

// Seed 1 has faults on, takeovers and a liveness phase (~2,000 machine events), so equal hashes
// mean more than an empty run twice.
const seed = 1
let databaseUrl = ''

beforeAll(async () => {
  databaseUrl = await freshDatabase('sim_determinism')
})

describe(`seed ${seed} twice gives one trace`, () => {
  it('on memory', async () => {
    console.log(`seed ${seed}`)
    const { hash, divergence } = await checkDeterminism({ seed, store: 'memory' })
    expect(divergence).toBeNull()
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
  })

  it('on embedded PGlite', async () => {
    console.log(`seed ${seed}`)
    // Both runs on one PGlite instance, each in a schema of its own (an instance takes seconds to start).
    const pglite = await PGlite.create()
    try {
      const { divergence } = await checkDeterminism({ seed, store: 'embedded', pglite })
      expect(divergence).toBeNull()
    } finally {
      await pglite.close()
    }
  })

  it('on PostgreSQL, and the same trace as on memory', async () => {
    console.log(`seed ${seed}`)
    const postgres = await checkDeterminism({ seed, store: 'postgres', databaseUrl })
    expect(postgres.divergence).toBeNull()
    // One store call at a time and no store-specific trace lines: the stores must agree too.
    const memory = await checkDeterminism({ seed, store: 'memory' })
    expect(postgres.hash).toBe(memory.hash)
  })
})
