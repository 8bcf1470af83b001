/**
 * The restart back-off holds across overlapping partition instances of one host: when one
 * instance of a queue dies of lost ownership and a sibling instance (of the draining partition
 * instance) then unloads cleanly, the queue still waits out its restart delay before it is
 * acquired again (DESIGN.md §6). These world seeds on memory interleave exactly that; the
 * ownership-loss checker flags a re-acquire inside the delay. The same holds when the instance
 * that heard the loss was an idle partition already unloading (its scope closes behind it).
 */
import { describe, expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

const overlappingSeeds = [156, 185, 393114845]

describe('restart back-off across overlapping partition instances', () => {
  // A versioned queue of a partition that had gone idle and unloaded lost its range while
  // draining; the back-off it earned must hold for the partition's next instance.
  it('world -1540339398, script [80]: the back-off of a queue that died in an unloading partition holds', async () => {
    console.log('world -1540339398 script [80]')
    const { result } = await runSeed({ seed: -1540339398, store: 'memory', script: [80] })
    expect(result.violations).toEqual([])
  })

  // A version's retirement drained its queue on the partition's owner, and an add and a poll
  // the drain had refused came back before the retirement took the version's fence: they made
  // the queue again (twice, as the retirement then dropped the slot of the new one), and the
  // instances took the range from each other and from the fence, so tasks stayed undelivered.
  // A version being retired now gets no queue until its backlog has moved.
  it('world 1053880973, script [160, 826, 889, 0, 8515, 0]: no queue of a version is made while it is being retired', async () => {
    console.log('world 1053880973 script [160,826,889,0,8515,0]')
    const { result } = await runSeed({ seed: 1053880973, store: 'memory', script: [160, 826, 889, 0, 8515, 0] })
    expect(result.violations).toEqual([])
  })

  for (const seed of overlappingSeeds) {
    it(`seed ${seed}: no re-acquire inside the restart delay`, async () => {
      console.log(`seed ${seed}`)
      const { result } = await runSeed({ seed, store: 'memory' })
      expect(result.violations).toEqual([])
    })
  }
})
