/**
 * The mutation menu must be caught: for each deliberate bug (sim/matching/Mutations.ts) the simulator
 * runs seeds 1, 2, … on memory until a checker reports a violation, and must get there within
 * 100 seeds. This is the evidence that the checkers can fail; the first violation is printed so
 * a reader sees which checker caught it and how it reads. The same seeds without a bug must
 * pass: a checker that flags the healthy runtime proves nothing by flagging a mutant.
 */
import { describe, expect, it } from 'vitest'
import { mutate, mutationNames } from './Mutations.ts'
import { runSeed } from './Simulation.ts'
import { huntMutation } from '../core/MutationHunt.ts'

const seedsMax = 100
// The seeds the mutants were caught on, for the clean run (the tests of a file run in order).
const caughtSeeds: number[] = []

describe('mutation menu', () => {
  for (const mutation of mutationNames) {
    it(`catches ${mutation} within ${seedsMax} seeds`, async () => {
      const { caughtAt, violation } = await huntMutation(seedsMax, async (seed) => (await runSeed({ seed, store: 'memory', ...mutate(mutation) })).result)
      console.log(`${mutation}: caught at seed ${caughtAt ?? `none of 1…${seedsMax}`}: ${violation}`)
      expect(caughtAt).not.toBeNull()
      expect(violation).not.toBe('')
      caughtSeeds.push(caughtAt as number)
    })
  }

  it('passes, without a bug, every seed up to the last one a mutant was caught on', async () => {
    const lastSeed = Math.max(1, ...caughtSeeds)
    console.log(`un-mutated: seeds 1…${lastSeed}`)
    for (let seed = 1; seed <= lastSeed; seed++) {
      const { result } = await runSeed({ seed, store: 'memory' })
      expect({ seed, violations: result.violations }).toEqual({ seed, violations: [] })
    }
  })
})
