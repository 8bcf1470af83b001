/**
 * The restart back-off holds across overlapping partition instances of one host: when one
 * instance of a queue dies of lost ownership and a sibling instance (of the draining partition
 * instance) then unloads cleanly, the queue still waits out its restart delay before it is
 * acquired again (DESIGN.md §6). These world seeds on memory interleave exactly that; the
 * ownership-loss checker flags a re-acquire inside the delay.
 */
import { describe, expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

const overlappingSeeds = [156, 185, 393114845]

describe('restart back-off across overlapping partition instances', () => {
  for (const seed of overlappingSeeds) {
    it(`seed ${seed}: no re-acquire inside the restart delay`, async () => {
      console.log(`seed ${seed}`)
      const { result } = await runSeed({ seed, store: 'memory' })
      expect(result.violations).toEqual([])
    })
  }
})
