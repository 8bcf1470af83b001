/**
 * A version's retirement tells the default queue about every row it moved there, even when the
 * retirement then fails: a relocation whose answer was lost after it committed (the store's
 * `maybeCommitted`) has moved its rows all the same. The default queue, loaded and read to the
 * end of that subqueue, reads again only when told; untold, it never sees the rows while it stays
 * busy, and the task is never delivered. This world on memory retires a version on the
 * partition's owner, and the relocation of its last row loses its answer after the commit.
 */
import { expect, it } from 'vitest'
import { runSeed } from './Simulation.ts'

it('world -4, script [7850, 549]: a row a failed retirement moved to the default queue is delivered', async () => {
  console.log('world -4 script [7850,549]')
  const { result } = await runSeed({ seed: -4, store: 'memory', script: [7850, 549] })
  expect(result.violations).toEqual([])
})
