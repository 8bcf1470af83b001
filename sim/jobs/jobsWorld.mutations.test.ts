/**
 * The job mutation menu must be caught: for each deliberate bug (sim/jobs/JobMutations.ts) the
 * end-to-end simulator runs seeds 1, 2, … on memory until a checker reports a violation, and must
 * get there within 100 seeds. This is the evidence that the job checkers can fail; each bug's
 * catching seed and first violation are printed, so a reader sees which checker caught it.
 *
 * The hunt skips the seeds that show a known failure of the current engine
 * (KnownEngineFailures.ts), and counts a violation of any checker as a catch, the known-failing
 * ones included: every seed it runs passes every checker without the bug, which the last test
 * shows for each seed up to the highest catching one. Each mutation runs only until its catching
 * seed, so the menu costs a few seconds.
 */
import { describe, expect, it } from 'vitest'
import { type JobMutationName, jobMutationNames, makeJobsMutant } from './JobMutations.ts'
import { runJobsSeed } from './JobsSimulation.ts'
import { knownEngineFailures, knownFailingSeeds } from './KnownEngineFailures.ts'
import { huntMutation } from '../core/MutationHunt.ts'

const seedsMax = 100
// Each mutation's catching seed, filled in as the hunts run (vitest runs a file's tests in order).
const caught = new Map<JobMutationName, number>()

describe('job mutation menu', () => {
  for (const mutation of jobMutationNames) {
    it(`catches ${mutation} within ${seedsMax} seeds`, async () => {
      const { caughtAt, violation } = await huntMutation(seedsMax, async (seed) => {
        if (knownFailingSeeds.has(seed)) return { ok: true, violations: [] }
        const { result } = await runJobsSeed({ seed, store: 'memory', mutant: makeJobsMutant(mutation) })
        return { ok: result.ok && result.knownFailing.length === 0, violations: [...result.violations, ...result.knownFailing] }
      })
      console.log(`${mutation}: caught at seed ${caughtAt ?? `none of 1…${seedsMax}`}: ${violation}`)
      expect(caughtAt).not.toBeNull()
      expect(violation).not.toBe('')
      caught.set(mutation, caughtAt as number)
    }, 120_000)
  }

  it('the seeds the hunts ran pass every checker without a bug, and the known failures show where listed', async () => {
    const highest = Math.max(0, ...caught.values())
    console.log(`catching seeds: ${jobMutationNames.map((mutation) => `${mutation} ${caught.get(mutation) ?? '-'}`).join(', ')}; clean up to seed ${highest}`)
    for (let seed = 1; seed <= highest; seed++) {
      if (knownFailingSeeds.has(seed)) continue
      const { result } = await runJobsSeed({ seed, store: 'memory' })
      expect([...result.violations, ...result.knownFailing], `seed ${seed} without a bug`).toEqual([])
    }
    // Each listed mechanism still shows on its first listed seed: the list is not stale.
    for (const failure of knownEngineFailures) {
      const seed = failure.seeds[0] as number
      const { result } = await runJobsSeed({ seed, store: 'memory' })
      expect(result.checkers[failure.checker], `${failure.checker} on seed ${seed}`).toBeGreaterThan(0)
    }
  }, 120_000)

  it('a world stopped by a violation still closes every engine: closing runs without faults', async () => {
    // With stealPartitions, seed 6 fails in the safety phase, while faults are still on; a host
    // crashing in the middle of its close would then be reported as an engine that never closed.
    const { result } = await runJobsSeed({ seed: 6, store: 'memory', mutant: makeJobsMutant('stealPartitions') })
    expect(result.livenessSteps).toBe(0)
    expect(result.violations.length).toBeGreaterThan(0)
    expect(result.violations.filter((violation) => violation.includes('never finished closing'))).toEqual([])
  })
})
