/**
 * The world at scale (ScaleWorld.ts), small enough for `npm test`: ten engines over 500 queue
 * partitions with faults on, one engine dying and one joining. Every checker must pass, each
 * change must converge within the bounds membership's timing allows, and each must move about
 * 1/N of the partitions and none between two engines that stayed. Seeds are drawn fresh (printed
 * first; `SIM_SEED` pins one); the deep run (MATCHBOX_DEEP=1) runs more of them and a larger group.
 */
import fc from 'fast-check'
import { expect, it } from 'vitest'
import { membershipHeartbeatIntervalMs, membershipHostTtlMs } from '../../src/kernel/Limits.ts'
import { seedFromEntropy } from '../../src/kernel/Random.ts'
import { deep } from '../../test/harness/depth.ts'
import { describeScaleOptions, scaleOptions, type ScaleSize } from './ScaleOptions.ts'
import { type ScaleReport, ScaleWorld } from './ScaleWorld.ts'

// A death shows once the dead engine's row expires and each engine's next beat reads the table:
// a row's lifetime plus one interval, plus the slow-call fault's delays on the beats in between.
const deathConvergedMsMax = membershipHostTtlMs + membershipHeartbeatIntervalMs + 2_000
// A join shows at each engine's next beat after the joiner's first one: one interval, plus slack.
const joinConvergedMsMax = 2 * membershipHeartbeatIntervalMs + 2_000
// Partitions moved, as a share of 1/N: 500 partitions over 10 engines move ~50 ± 7 (one sigma).
const movedToleranceOfExpected = 0.5

const baseSeed = Number(process.env.SIM_SEED ?? (seedFromEntropy() >>> 0) % 2 ** 31)
const runs = deep ? 10 : 1

async function runScale(size: ScaleSize): Promise<ScaleReport> {
  const options = scaleOptions(size)
  console.log(describeScaleOptions(options).join('\n'))
  return new ScaleWorld(options).run()
}

function expectHealthy(report: ScaleReport): void {
  console.log(`${report.committedJobs} jobs, ${report.forwardedPolls} forwarded polls, changes ${report.changes.map((change) => `${change.kind} ${change.convergedMs} ms${change.rebalance === null ? '' : ` moved ${change.rebalance.moved}/${change.rebalance.partitions}`}`).join(', ')}; known: ${report.strandedWithMatching} stranded with Matching, ${report.strandedBehind} behind them`)
  expect(report.violations).toEqual([])
  expect(report.ok).toBe(true)
  expect(report.committedJobs).toBeGreaterThan(0)
  expect(report.forwardedPolls).toBeGreaterThan(0)
  for (const change of report.changes) {
    expect(change.convergedMs, `${change.kind} converged`).not.toBeNull()
    if (change.kind === 'death') expect(change.convergedMs).toBeLessThanOrEqual(deathConvergedMsMax)
    if (change.kind === 'join') expect(change.convergedMs).toBeLessThanOrEqual(joinConvergedMsMax)
    if (change.rebalance === null) continue
    const { movedFraction, expectedFraction, strayMoves } = change.rebalance
    expect(strayMoves, `${change.kind}: moves between engines that stayed`).toBe(0)
    expect(Math.abs(movedFraction - expectedFraction), `${change.kind}: moved ${movedFraction} against 1/N = ${expectedFraction}`).toBeLessThanOrEqual(expectedFraction * movedToleranceOfExpected)
  }
}

it(`ten engines over 500 partitions: checkers pass, changes converge and move about 1/N (${runs} seeds from ${baseSeed})`, async () => {
  console.log(`seed ${baseSeed}`)
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), async (seed) => {
      console.log(`world seed ${seed}`)
      expectHealthy(await runScale({ seed, engines: 10, partitions: 500, enqueuePerS: 20, steadyMs: 1_000 }))
    }),
    { numRuns: runs, seed: baseSeed, endOnFailure: true },
  )
}, 600_000)

it('one seed twice gives one trace', async () => {
  const seed = 7
  console.log(`seed ${seed}`)
  const size = { seed, engines: 4, partitions: 100, enqueuePerS: 10, steadyMs: 1_000 }
  const first = await runScale(size)
  const second = await runScale(size)
  expect(first.ioRuns).toBeGreaterThan(0)
  expect(second.traceHash).toBe(first.traceHash)
  expect(second.ioRuns).toBe(first.ioRuns)
}, 600_000)

it.runIf(deep)('a larger group: fifty engines over 5,000 partitions', async () => {
  const seed = baseSeed
  console.log(`seed ${seed}`)
  expectHealthy(await runScale({ seed, engines: 50, partitions: 5_000, steadyMs: 5_000 }))
}, 3_600_000)
