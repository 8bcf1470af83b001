/**
 * runInSeedOrder: seeds that finish out of order are handed on in seed order, never more than
 * `parallel` run at once, and a failing seed rejects the batch after the seeds before it were
 * handed on, with no seed started after it; a seed is announced (its header) only once every
 * seed before it was handed on, so no other seed's lines come between a seed's header and its
 * result. Seeds are promises the test settles by hand.
 */
import { describe, expect, it } from 'vitest'
import { runInSeedOrder } from './ParallelSeeds.ts'

// A seed the test settles when it likes.
interface Pending {
  readonly index: number
  readonly resolve: (value: string) => void
  readonly reject: (error: Error) => void
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('runInSeedOrder', () => {
  it('hands results on in seed order with at most `parallel` in flight', async () => {
    const started: Pending[] = []
    const handed: Array<[string, number]> = []
    let inFlight = 0
    let inFlightMax = 0
    const done = runInSeedOrder(
      5,
      2,
      (index) =>
        new Promise<string>((resolve, reject) => {
          inFlight++
          inFlightMax = Math.max(inFlightMax, inFlight)
          started.push({ index, resolve: (value) => (inFlight--, resolve(value)), reject })
        }),
      (value, index) => void handed.push([value, index]),
    )
    expect(started.map((seed) => seed.index)).toEqual([0, 1])
    started[1]?.resolve('b')
    await turn()
    // Seed 1 finished first: seed 2 starts, but nothing is handed on before seed 0.
    expect(started.map((seed) => seed.index)).toEqual([0, 1, 2])
    expect(handed).toEqual([])
    started[2]?.resolve('c')
    await turn()
    started[0]?.resolve('a')
    await turn()
    expect(handed).toEqual([['a', 0], ['b', 1], ['c', 2]])
    started[4]?.resolve('e')
    started[3]?.resolve('d')
    await done
    expect(handed.map(([value]) => value)).toEqual(['a', 'b', 'c', 'd', 'e'])
    expect(inFlightMax).toBe(2)
  })

  it('rejects with a failing seed after the ones before it, and starts no more', async () => {
    const started: Pending[] = []
    const handed: number[] = []
    const done = runInSeedOrder(4, 2, (index) => new Promise<string>((resolve, reject) => started.push({ index, resolve, reject })), (_, index) => void handed.push(index))
    const outcome = done.then(() => 'resolved', (error: Error) => error.message)
    started[1]?.reject(new Error('seed 1 broke'))
    await turn()
    started[0]?.resolve('a')
    expect(await outcome).toBe('seed 1 broke')
    expect(handed).toEqual([0])
    expect(started.map((seed) => seed.index)).toEqual([0, 1])
  })

  it('announces each seed after the one before it was handed on, so its header and its result sit together', async () => {
    for (const parallel of [1, 2]) {
      const started = new Map<number, Pending>()
      const lines: string[] = []
      const done = runInSeedOrder(
        3,
        parallel,
        (index) => new Promise<string>((resolve, reject) => void started.set(index, { index, resolve, reject })),
        (value, index) => void lines.push(`result ${index} ${value}`),
        (index) => void lines.push(`header ${index}`),
      )
      // The later seed finishes first whenever two run at once.
      if (parallel === 2) {
        started.get(1)?.resolve('b')
        await turn()
        expect(lines, 'seed 2 started, but seed 0 was not handed on yet').toEqual(['header 0'])
      }
      started.get(0)?.resolve('a')
      await turn()
      started.get(1)?.resolve('b')
      await turn()
      started.get(2)?.resolve('c')
      await done
      expect(lines, `parallel ${parallel}`).toEqual(['header 0', 'result 0 a', 'header 1', 'result 1 b', 'header 2', 'result 2 c'])
    }
  })
})
