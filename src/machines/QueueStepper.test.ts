import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { initialTransition, transition } from 'xstate'
import { makeTask } from '../domain/Task.ts'
import { physicalQueueMachine } from './PhysicalQueueMachine.ts'
import { commandsOf, type QueueEvent } from './PhysicalQueueProtocol.ts'
import { startQueueMachine, stepQueueMachine } from './QueueStepper.ts'

const key = { namespace: 'default', family: 'emails', type: 'activity', partition: 0, version: null } as const
const metadata = { key, rangeId: 2, lastTaskId: 0, ackLevels: {}, updatedAtMs: 0 }

// One kind of event per entry; ids and History answers come from what the machine asked for.
type Move = 'add' | 'poll' | 'cancel' | 'started' | 'retryable' | 'appended' | 'read' | 'timer' | 'checkpointed' | 'drain'
const moves: ReadonlyArray<Move> = ['add', 'poll', 'cancel', 'started', 'retryable', 'appended', 'read', 'timer', 'checkpointed', 'drain']

describe('QueueStepper', () => {
  it('gives the snapshots and commands transition() gives, for any run of events', () => {
    const seed = Number(process.env.PROPERTY_SEED ?? Date.now() % 1_000_000)
    console.log(`QueueStepper property seed ${seed}`)
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...moves), { maxLength: 60 }), (run) => {
        const input = { queue: 'q', nowMs: 0, limits: { appendBatchSizeMax: 2 } }
        let [expected, actions] = initialTransition(physicalQueueMachine, input)
        let [actual, commands] = startQueueMachine(input)
        expect(commands).toEqual(commandsOf(actions))
        const deliveries: string[] = []
        const batches: string[] = []
        const reads: number[] = []
        let taskId = 0
        const events: QueueEvent[] = [{ type: 'queue.acquired', nowMs: 0, metadata }]
        for (const [index, move] of run.entries()) {
          const nowMs = index * 100
          if (move === 'add') events.push({ type: 'task.added', nowMs, requestId: `a${index}`, task: makeTask({ jobId: `j${index}`, createdAtMs: 0 }) })
          if (move === 'poll') events.push({ type: 'poll.arrived', nowMs, pollId: `p${index}`, identity: 'w' })
          if (move === 'cancel') events.push({ type: 'poll.cancelled', nowMs, pollId: `p${index - 1}` })
          if (move === 'started' || move === 'retryable') {
            const deliveryId = deliveries.shift()
            const outcome = move === 'started' ? ({ kind: 'started', response: null } as const) : ({ kind: 'retryable', reason: 'busy', retryDelayMs: 150 } as const)
            if (deliveryId !== undefined) events.push({ type: 'dispatch.completed', nowMs, deliveryId, outcome })
          }
          if (move === 'appended') {
            const batchId = batches.shift()
            if (batchId !== undefined) events.push({ type: 'append.completed', nowMs, batchId, firstTaskId: 1_000 + index * 10 })
          }
          if (move === 'read') {
            const subqueue = reads.shift()
            if (subqueue !== undefined) events.push({ type: 'read.completed', nowMs, subqueue, tasks: [{ taskId: ++taskId, task: makeTask({ jobId: `r${taskId}`, createdAtMs: 0 }) }], limit: 1 })
          }
          if (move === 'timer') events.push({ type: 'timer.fired', nowMs, name: 'retry' })
          if (move === 'checkpointed') events.push({ type: 'checkpoint.completed', nowMs, metadata })
          if (move === 'drain') events.push({ type: 'drain.requested', nowMs, reason: 'test' })
          for (const event of events.splice(0)) {
            ;[expected, actions] = transition(physicalQueueMachine, expected, event)
            ;[actual, commands] = stepQueueMachine(actual, event)
            expect(commands).toEqual(commandsOf(actions))
            expect(actual.value).toEqual(expected.value)
            expect(actual.status).toEqual(expected.status)
            expect(actual.context).toEqual(expected.context)
            for (const command of commands) {
              if (command.type === 'history.recordStart') deliveries.push(command.params.deliveryId)
              if (command.type === 'store.append') batches.push(command.params.batchId)
              if (command.type === 'store.read') reads.push(command.params.subqueue)
            }
          }
        }
      }),
      { seed, numRuns: 200 },
    )
  })
})
