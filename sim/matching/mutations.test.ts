/**
 * The mutation menu must be caught: for each deliberate bug (sim/matching/Mutations.ts) the simulator
 * runs seeds 1, 2, … on memory until a checker reports a violation, and must get there within
 * 100 seeds. This is the evidence that the checkers can fail; the first violation is printed so
 * a reader sees which checker caught it and how it reads.
 */
import { describe, expect, it } from 'vitest'
import { mutationNames, wrapWith } from './Mutations.ts'
import { runSeed } from './Simulation.ts'
import { huntMutation } from '../core/MutationHunt.ts'

const seedsMax = 100

describe('mutation menu', () => {
  for (const mutation of mutationNames) {
    it(`catches ${mutation} within ${seedsMax} seeds`, async () => {
      const { caughtAt, violation } = await huntMutation(seedsMax, async (seed) => (await runSeed({ seed, store: 'memory', wrapStore: wrapWith(mutation) })).result)
      console.log(`${mutation}: caught at seed ${caughtAt ?? `none of 1…${seedsMax}`}: ${violation}`)
      expect(caughtAt).not.toBeNull()
      expect(violation).not.toBe('')
    })
  }
})
