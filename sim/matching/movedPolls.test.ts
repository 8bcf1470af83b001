/**
 * A host moves a waiting poll to a task stored on another of its partitions even when that
 * partition's instance is newer than the poll's choice: the instance the poll knew unloaded and
 * the host loaded the partition again (ownership churn, a version's retirement). The poll must
 * look at the instance the host has now, not stop at the stale one it remembers. This world on
 * memory interleaves exactly that; tasks stayed undelivered through the liveness phase.
 */
import { expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

it('world -1080882106, script [9217, 1574, 9398, 9412, 6276, 2707]: a task stored on a partition reloaded since the poll chose reaches a poll', async () => {
  console.log('world -1080882106 script [9217,1574,9398,9412,6276,2707]')
  const { result } = await runSeed({ seed: -1080882106, store: 'memory', script: [9217, 1574, 9398, 9412, 6276, 2707] })
  expect(result.violations).toEqual([])
})
