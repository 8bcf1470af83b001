/**
 * The job mutation menu must be caught: for each deliberate JobStore bug (sim/JobMutations.ts)
 * the end-to-end simulator runs seeds 1, 2, … on memory until a job checker reports a
 * violation, and must get there within 100 seeds. This is the evidence that the job checkers
 * can fail; the first violation is printed so a reader sees which checker caught it.
 */
import { describe, expect, it } from 'vitest'
import { jobMutationNames, wrapJobsWith } from './JobMutations.ts'
import { runJobsSeed } from './JobsSimulation.ts'
import { huntMutation } from './MutationHunt.ts'

const seedsMax = 100

describe('job mutation menu', () => {
  for (const mutation of jobMutationNames) {
    it(`catches ${mutation} within ${seedsMax} seeds`, async () => {
      const { caughtAt, violation } = await huntMutation(seedsMax, async (seed) => (await runJobsSeed({ seed, store: 'memory', wrapJobStore: wrapJobsWith(mutation) })).result)
      console.log(`${mutation}: caught at seed ${caughtAt ?? `none of 1…${seedsMax}`}: ${violation}`)
      expect(caughtAt).not.toBeNull()
      expect(violation).not.toBe('')
    })
  }
})
