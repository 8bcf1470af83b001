/** StoreHealth: one `store.unavailable` per outage, one `store.recovered` with its length, results and errors passed through. */
import { expect, it } from 'vitest'
import { InvalidInput, Unavailable } from '../domain/errors.ts'
import { makeMemoryJobStore } from '../persistence/jobs/MemoryJobStore.ts'
import type { JobStore } from '../persistence/jobs/JobStore.ts'
import { makeEventHub, type MatchboxEvent } from './Events.ts'
import { makeObservedJobStore } from './StoreHealth.ts'

it('reports an outage once and its recovery with how long it lasted', async () => {
  let down = false
  let nowMs = 1_000
  const inner = makeMemoryJobStore()
  const flaky: JobStore = {
    ...inner,
    async countJobs(params) {
      if (down) throw new Unavailable({ operation: 'countJobs', detail: 'connection refused', maybeCommitted: false })
      return inner.countJobs(params)
    },
  }
  const events: MatchboxEvent[] = []
  const store = makeObservedJobStore(flaky, makeEventHub({ onEvent: (event) => events.push(event) }), () => nowMs)
  expect(store.kind).toBe('memory')
  expect(await store.countJobs({ queue: 'q' })).toEqual({ pending: 0, processing: 0, dead: 0 })
  down = true
  await expect(store.countJobs({ queue: 'q' })).rejects.toBeInstanceOf(Unavailable)
  nowMs = 1_500
  await expect(store.countJobs({ queue: 'q' })).rejects.toBeInstanceOf(Unavailable)
  down = false
  await expect(store.countJobs({ queue: '' })).rejects.toBeInstanceOf(InvalidInput)
  nowMs = 4_000
  await store.countJobs({ queue: 'q' })
  await store.countJobs({ queue: 'q' })
  expect(events).toEqual([
    { type: 'store.unavailable', operation: 'countJobs', error: expect.stringContaining('connection refused'), at: 1_000 },
    { type: 'store.recovered', downMs: 3_000, at: 4_000 },
  ])
})

it('a listener that throws does not break the emitter; the logger hears about it', () => {
  const errors: string[] = []
  const hub = makeEventHub({ logger: { info() {}, warn() {}, error: (_object, message) => errors.push(message ?? '') } })
  hub.on('store.recovered', () => {
    throw new Error('listener bug')
  })
  hub.emit({ type: 'store.recovered', downMs: 1, at: 1 })
  expect(errors).toEqual(['matchbox event listener threw'])
  expect(() => hub.on('job.finished' as never, () => {})).toThrow(expect.objectContaining({ _tag: 'InvalidInput', field: 'type' }))
})
