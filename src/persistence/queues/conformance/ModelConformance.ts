/**
 * ModelConformance — a fast-check property: random interleavings of acquire, append (current
 * or stale range), checkpoint (current or stale range, valid or too-high level) and read on one
 * queue, checked after every step against a tiny model that is obviously right.
 *
 * The model: a range id, a last id, the registered subqueues' ack levels and a map of stored ids to their subqueue.
 * Every run uses a fresh queue key, so runs never see each other's rows. The seed is printed
 * before the property runs; `SIM_SEED=<seed>` replays it.
 *
 * Does not: interleave concurrent callers; fencing across connections is the simulator's job.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { QueueKey } from '../../../domain/QueueKey.ts'
import { priorityMax } from '../../../kernel/Limits.ts'
import type { Store } from '../Store.ts'
import { type ConformanceFixture, expectRejection, readAll, task } from './ConformanceFixture.ts'

type Step =
  | { readonly kind: 'acquire' }
  | { readonly kind: 'append'; readonly priorities: ReadonlyArray<number>; readonly stale: boolean }
  | { readonly kind: 'checkpoint'; readonly subqueue: number; readonly pick: number; readonly stale: boolean }
  | { readonly kind: 'read'; readonly subqueue: number; readonly pick: number; readonly limit: number }

// Few subqueues so that checkpoints and reads hit rows often.
const subqueue = fc.constantFrom(0, 3, priorityMax)

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('acquire' as const) }),
  fc.record({ kind: fc.constant('append' as const), priorities: fc.array(subqueue, { minLength: 1, maxLength: 6 }), stale: fc.boolean() }),
  fc.record({ kind: fc.constant('checkpoint' as const), subqueue, pick: fc.nat(), stale: fc.boolean() }),
  fc.record({ kind: fc.constant('read' as const), subqueue, pick: fc.nat(), limit: fc.integer({ min: 1, max: 4 }) }),
)

interface Model {
  rangeId: number
  lastTaskId: number
  /** Subqueues ever appended to or checkpointed → ack level. */
  readonly ackLevels: Record<number, number>
  /** Stored id → its subqueue. */
  readonly rows: Map<number, number>
}

function storedIds(model: Model, sub: number): number[] {
  return [...model.rows].filter(([, s]) => s === sub).map(([id]) => id)
}

function staleRange(model: Model): number {
  return model.rangeId === 1 ? 2 : model.rangeId - 1
}

async function apply(store: Store, key: QueueKey, model: Model, next: Step, jobCounter: { n: number }): Promise<void> {
  switch (next.kind) {
    case 'acquire': {
      model.rangeId += 1
      const metadata = await store.acquire({ key, nowMs: 1 })
      expect(metadata.rangeId).toBe(model.rangeId)
      return
    }
    case 'append': {
      const batch = next.priorities.map((priority) => task(`job-${++jobCounter.n}`, { priority }))
      if (next.stale) {
        await expectRejection(store.append({ key, rangeId: staleRange(model), tasks: batch, nowMs: 1 }), 'OwnershipLost', { currentRangeId: model.rangeId })
        return
      }
      const result = await store.append({ key, rangeId: model.rangeId, tasks: batch, nowMs: 1 })
      expect(result).toEqual({ firstTaskId: model.lastTaskId + 1, lastTaskId: model.lastTaskId + batch.length })
      next.priorities.forEach((priority, index) => {
        model.rows.set(model.lastTaskId + 1 + index, priority)
        model.ackLevels[priority] ??= 0
      })
      model.lastTaskId += batch.length
      return
    }
    case 'checkpoint': {
      // One value in lastTaskId + 2 is too high, so refusals are drawn as often as the rest.
      const ackLevel = next.pick % (model.lastTaskId + 2)
      const params = { key, ackLevels: [{ subqueue: next.subqueue, ackLevel }], nowMs: 1 }
      if (next.stale) {
        await expectRejection(store.checkpoint({ ...params, rangeId: staleRange(model) }), 'OwnershipLost', { currentRangeId: model.rangeId })
        return
      }
      if (ackLevel > model.lastTaskId) {
        await expectRejection(store.checkpoint({ ...params, rangeId: model.rangeId }), 'InvalidInput', { field: 'ackLevels[0].ackLevel' })
        return
      }
      const level = Math.max(model.ackLevels[next.subqueue] ?? 0, ackLevel)
      model.ackLevels[next.subqueue] = level
      const doomed = storedIds(model, next.subqueue).filter((id) => id <= level)
      for (const id of doomed) model.rows.delete(id)
      const result = await store.checkpoint({ ...params, rangeId: model.rangeId })
      expect(result.deletedRows).toBe(doomed.length)
      expect(result.metadata.ackLevels).toEqual(model.ackLevels)
      return
    }
    case 'read': {
      const afterTaskId = next.pick % (model.lastTaskId + 2)
      const page = await store.read({ key, subqueue: next.subqueue, afterTaskId, limit: next.limit })
      const expected = storedIds(model, next.subqueue)
        .filter((id) => id > afterTaskId)
        .sort((a, b) => a - b)
        .slice(0, next.limit)
      expect(page.map((row) => row.taskId)).toEqual(expected)
      expect(page.every((row) => row.task.priority === next.subqueue)).toBe(true)
      return
    }
  }
}

async function expectMatches(store: Store, key: QueueKey, model: Model): Promise<void> {
  const inspection = await store.inspect(key)
  expect(inspection?.metadata.rangeId).toBe(model.rangeId)
  expect(inspection?.metadata.lastTaskId).toBe(model.lastTaskId)
  expect(inspection?.metadata.ackLevels).toEqual(model.ackLevels)
  const bySubqueue: Record<number, number> = {}
  for (const sub of model.rows.values()) bySubqueue[sub] = (bySubqueue[sub] ?? 0) + 1
  expect(inspection?.storedRowsBySubqueue).toEqual(bySubqueue)
  expect(inspection?.storedRows).toBe(model.rows.size)
}

/** Registers the model-based property. */
export function describeModelConformance(fixture: ConformanceFixture): void {
  describe('model', () => {
    it('random interleavings of acquire, append, checkpoint and read agree with the model', async () => {
      console.log(`Store conformance ${fixture.name}: model property seed ${fixture.seed} (replay with SIM_SEED=${fixture.seed}), ${fixture.propertyRuns} runs`)
      await fc.assert(
        fc.asyncProperty(fc.array(step, { maxLength: 24 }), async (steps) => {
          const store = fixture.store()
          const key = fixture.key()
          await store.acquire({ key, nowMs: 1 })
          const model: Model = { rangeId: 1, lastTaskId: 0, ackLevels: {}, rows: new Map() }
          const jobCounter = { n: 0 }
          for (const next of steps) {
            await apply(store, key, model, next, jobCounter)
            await expectMatches(store, key, model)
          }
          for (let sub = 0; sub <= priorityMax; sub++) {
            const rows = await readAll(store, key, sub)
            expect(rows.map((row) => row.taskId)).toEqual(storedIds(model, sub).sort((a, b) => a - b))
          }
        }),
        { seed: fixture.seed, numRuns: fixture.propertyRuns },
      )
    })
  })
}
