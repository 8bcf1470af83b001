/**
 * How a host moves its waiting polls between its partitions of a family, in two worlds on memory.
 *
 * - It moves a waiting poll to a task stored on another of its partitions even when that
 *   partition's instance is newer than the poll's choice: the instance the poll knew unloaded and
 *   the host loaded the partition again (ownership churn, a version's retirement). The poll must
 *   look at the instance the host has now, not stop at the stale one it remembers; tasks stayed
 *   undelivered through the liveness phase without it.
 * - It spends a move only on a poll that is idle: one whose queue has it with History (matched a
 *   task that History is starting) would be answered by that task where it is. In world 307727355
 *   a partition's read made tasks ready while two polls of host-3 waited on another partition, one
 *   of them with History for a run of stale tasks: the move went to that one, and the idle poll
 *   waited beside nothing for the rest of its wait (the idle-poll checker).
 */
import { expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

it('world -1080882106, script [9217, 1574, 9398, 9412, 6276, 2707]: a task stored on a partition reloaded since the poll chose reaches a poll', async () => {
  console.log('world -1080882106 script [9217,1574,9398,9412,6276,2707]')
  const { result } = await runSeed({ seed: -1080882106, store: 'memory', script: [9217, 1574, 9398, 9412, 6276, 2707] })
  expect(result.violations).toEqual([])
})

it('world 307727355, script [9551, 2173, 1855, 8364, 4051, 5858, 4620, 7231]: a task made ready where no poll waits moves an idle poll, not one with History', async () => {
  console.log('world 307727355 script [9551,2173,1855,8364,4051,5858,4620,7231]')
  const { result } = await runSeed({ seed: 307727355, store: 'memory', script: [9551, 2173, 1855, 8364, 4051, 5858, 4620, 7231] })
  expect(result.violations).toEqual([])
})
