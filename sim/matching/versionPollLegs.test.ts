/**
 * A poll of the family's current version waits on its version's queue and on the default queue.
 * Once one of them answers it with a task, its wait on the other ends too: left waiting there, it
 * would be matched the next task stored in that queue, started for a poller that already has its
 * answer, while another poll waits idle beside it (the idle-poll checker sees it; the task itself
 * comes back only after History's timeout). In this world on memory, host-2's v1 poll is answered
 * from partition 1's v1 queue in the instant a plain poll arrives there, and partition 2's default
 * queue holds tasks until the world's next move of time.
 */
import { expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

it('world 77: a version poll answered by its version queue leaves no wait behind on the default queue', async () => {
  console.log('world 77')
  const { result } = await runSeed({ seed: 77, store: 'memory' })
  expect(result.violations).toEqual([])
})
