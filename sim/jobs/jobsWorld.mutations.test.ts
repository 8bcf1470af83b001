/**
 * The job mutation menu must be caught: for each deliberate bug (sim/jobs/JobMutations.ts: JobStore
 * bugs; `dropHandOver`, a lost forwarded hand-over whose claim is then never delivered again;
 * `stealPartitions`, engines routing as if they owned every partition) the end-to-end simulator
 * runs seeds 1, 2, … on memory until a checker reports a
 * violation, and must get there within 100 seeds. This is the evidence that the job checkers
 * can fail; the first violation is printed so a reader sees which checker caught it. For
 * `dropHandOver` the same seeds must pass without the bug: a lost message alone is legal (the
 * world's `bus.drop` fault loses them all the time), so what the checkers catch is the job lost.
 */
import { describe, expect, it } from 'vitest'
import { type JobMutationName, jobMutationNames, makeJobsMutant } from './JobMutations.ts'
import { runJobsSeed } from './JobsSimulation.ts'
import { huntMutation } from '../core/MutationHunt.ts'

const seedsMax = 100
// Caught by a checker on the known-failing list (JobCheckers.ts): a seed catches such a bug when
// the mutant's run has more of those violations than the same seed without it, until the engine
// passes them and this list empties.
const caughtByKnownFailing: ReadonlyArray<JobMutationName> = ['handOverLost', 'stopAbandonsLocalQueue', 'dueSignalLost']

describe('job mutation menu', () => {
  for (const mutation of jobMutationNames) {
    it(`catches ${mutation} within ${seedsMax} seeds`, async () => {
      const known = caughtByKnownFailing.includes(mutation)
      const { caughtAt, violation } = await huntMutation(seedsMax, async (seed) => {
        const { result } = await runJobsSeed({ seed, store: 'memory', mutant: makeJobsMutant(mutation) })
        if (!known || !result.ok) return result
        const clean = (await runJobsSeed({ seed, store: 'memory' })).result
        return { ok: result.knownFailing.length <= clean.knownFailing.length, violations: result.knownFailing }
      })
      console.log(`${mutation}: caught at seed ${caughtAt ?? `none of 1…${seedsMax}`}: ${violation}`)
      expect(caughtAt).not.toBeNull()
      expect(violation).not.toBe('')
      if (mutation !== 'dropHandOver' && mutation !== 'handOverLost') return
      for (let seed = 1; seed <= (caughtAt as number); seed++) {
        const { result } = await runJobsSeed({ seed, store: 'memory' })
        expect(result.violations, `seed ${seed} without the bug`).toEqual([])
      }
    }, 120_000)
  }

  it('a world stopped by a violation still closes every engine: closing runs without faults', async () => {
    // With stealPartitions, seed 6 fails in the safety phase, while faults are still on; a host
    // crashing in the middle of its close would then be reported as an engine that never closed.
    const { result } = await runJobsSeed({ seed: 6, store: 'memory', mutant: makeJobsMutant('stealPartitions') })
    expect(result.violations.length).toBeGreaterThan(0)
    expect(result.violations.filter((violation) => String(violation).includes('never finished closing'))).toEqual([])
  })
})
