import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { makeAckWindow, markHandled, markRead, outstandingCount, skipTo } from './AckWindow.ts'

// The trivially correct model: every id read, and which are handled; the ack level is the
// largest L (between the start and the read level) with every read id ≤ L handled.
interface Model {
  start: number
  readLevel: number
  read: number[]
  handled: Set<number>
}

function modelAckLevel(model: Model, previous: number): number {
  const firstUnhandled = model.read.find((id) => !model.handled.has(id))
  const level = firstUnhandled === undefined ? model.readLevel : firstUnhandled - 1
  return Math.max(previous, level)
}

type Op = { kind: 'read'; gaps: number[] } | { kind: 'handle'; pick: number } | { kind: 'skip'; by: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('read' as const), gaps: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 5 }) }),
  fc.record({ kind: fc.constant('handle' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('skip' as const), by: fc.integer({ min: 0, max: 3 }) }),
)

describe('AckWindow', () => {
  it('walks upstream Matching: tasks 1–3 read, 2 handled first, then 1', () => {
    let window = markRead(makeAckWindow(0), [1, 2, 3])
    window = markHandled(window, 2)
    expect(window).toMatchObject({ ackLevel: 0, readLevel: 3, handledAboveAck: [2], unhandled: [1, 3] })
    window = markHandled(window, 1)
    expect(window).toMatchObject({ ackLevel: 2, readLevel: 3, handledAboveAck: [], unhandled: [3] })
    expect(outstandingCount(window)).toBe(1)
  })

  it('rejects reads that do not move forward', () => {
    const window = markRead(makeAckWindow(5), [6])
    expect(() => markRead(window, [6])).toThrow(/not above/)
  })

  it('skipping over dropped rows advances the ack level when nothing is outstanding', () => {
    expect(skipTo(makeAckWindow(3), 9)).toMatchObject({ ackLevel: 9, readLevel: 9 })
    const withGap = skipTo(markRead(makeAckWindow(0), [1]), 4)
    expect(withGap).toMatchObject({ ackLevel: 0, readLevel: 4 })
    expect(markHandled(withGap, 1).ackLevel).toBe(4)
  })

  it('agrees with the model on any sequence of reads, handles and skips', () => {
    const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
    console.log(`AckWindow property seed=${seed}`)
    fc.assert(
      fc.property(fc.nat({ max: 50 }), fc.array(op, { maxLength: 60 }), (start, ops) => {
        let window = makeAckWindow(start)
        const model: Model = { start, readLevel: start, read: [], handled: new Set() }
        let ackLevel = start
        for (const step of ops) {
          if (step.kind === 'read') {
            const ids: number[] = []
            let next = model.readLevel
            for (const gap of step.gaps) ids.push((next += gap))
            window = markRead(window, ids)
            model.read.push(...ids)
            if (ids.length > 0) model.readLevel = ids[ids.length - 1] as number
          } else if (step.kind === 'handle') {
            const candidates = model.read.filter((id) => !model.handled.has(id))
            if (candidates.length === 0) continue
            const id = candidates[step.pick % candidates.length] as number
            window = markHandled(window, id)
            model.handled.add(id)
          } else {
            window = skipTo(window, model.readLevel + step.by)
            model.readLevel += step.by
          }
          const expected = modelAckLevel(model, ackLevel)
          expect(window.ackLevel).toBe(expected)
          expect(window.ackLevel).toBeGreaterThanOrEqual(ackLevel)
          expect(window.readLevel).toBe(model.readLevel)
          expect(window.unhandled).toEqual(model.read.filter((id) => !model.handled.has(id)))
          ackLevel = expected
        }
      }),
      { seed, numRuns: 500 },
    )
  })
})
