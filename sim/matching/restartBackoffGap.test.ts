/**
 * A gap in the runtime the ownership-loss checker found, kept visible: when two partition
 * instances of one host overlap, each may hold an instance of the same queue; if one dies of lost
 * ownership and the other then unloads cleanly, PartitionActor's restart book (one entry per
 * queue slot) forgets the delay and the queue is re-acquired at once — against DESIGN.md §6
 * ("recreated only after a doubling restart delay"). The default checker follows the runtime's
 * book (OwnershipLossChecker.ts); the strict one holds the promise and flags these seeds.
 *
 * When the runtime keeps the delay across a sibling's clean unload, the strict runs below pass
 * and this test fails: then make `strictBackoff` the checker's only behaviour and delete this file.
 */
import { describe, expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

// World seeds on memory where the gap shows (found by `matchbox sim --seeds 200 --seed 1` and the pinned property run).
const gapSeeds = [156, 185, 393114845]

describe('restart back-off across overlapping partition instances', () => {
  for (const seed of gapSeeds) {
    it(`seed ${seed}: the strict checker sees a re-acquire inside the back-off; the default one passes`, async () => {
      console.log(`seed ${seed}`)
      const strict = await runSeed({ seed, store: 'memory', strictBackoff: true })
      expect(strict.result.violations[0]).toMatch(/re-acquired \d+ ms after it heard OwnershipLost, skipping the restart back-off/)
      const lenient = await runSeed({ seed, store: 'memory' })
      expect(lenient.result.violations).toEqual([])
    })
  }
})
