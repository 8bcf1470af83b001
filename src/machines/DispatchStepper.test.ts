/**
 * The dispatch stepper's memory of steps that changed nothing: the same event again on the same
 * snapshot answers without stepping the machine, and any other event (another type, or the same
 * type with another value in a field) is stepped. The property in DispatchMachine.test.ts checks
 * that every answer, remembered or stepped, is what `transition()` gives.
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { type DispatchMachine, dispatchMachine, isDrained } from './DispatchMachine.ts'
import { makeDispatchStepper } from './DispatchStepper.ts'

// The dispatch machine, counting the steps it is asked for.
function countingMachine(): { readonly machine: DispatchMachine; readonly steps: () => number } {
  let steps = 0
  const machine = Object.create(dispatchMachine, {
    transition: {
      value: (...args: Parameters<DispatchMachine['transition']>) => {
        steps++
        return dispatchMachine.transition(...args)
      },
    },
  }) as DispatchMachine
  return { machine, steps: () => steps }
}

describe('DispatchStepper', () => {
  it('answers an event that changed nothing on the same snapshot again without stepping', () => {
    const { machine, steps } = countingMachine()
    const stepper = makeDispatchStepper(machine)
    const [serving] = stepper.step(stepper.start('q'), { type: 'partition.loaded', instance: '0#1' })
    const full = { type: 'store.answered', generation: 0, asked: 1, claimed: 1, overlapped: false } as const
    const [first, firstCommands] = stepper.step(serving, full)
    expect(first).toBe(serving)
    expect(firstCommands).toEqual([])
    const before = steps()
    const [again, againCommands] = stepper.step(first, { ...full })
    expect(again).toBe(serving)
    expect(againCommands).toEqual([])
    expect(steps()).toBe(before)
  })

  it('steps an event of the same type with another value in a field, and an event of another type', () => {
    const { machine, steps } = countingMachine()
    const stepper = makeDispatchStepper(machine)
    const [serving] = stepper.step(stepper.start('q'), { type: 'partition.loaded', instance: '0#1' })
    stepper.step(serving, { type: 'store.answered', generation: 0, asked: 1, claimed: 1, overlapped: false })
    const before = steps()
    // A short answer drains the store: remembered as the full one, it would not.
    const [drained] = stepper.step(serving, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false })
    expect(steps()).toBe(before + 1)
    expect(isDrained(drained)).toBe(true)
    const job = { id: 'a', queue: 'q', state: 'processing', claimToken: 't-a' } as unknown as JobRecord
    const [, commands] = stepper.step(serving, { type: 'job.handed', job, claimId: null })
    expect(steps()).toBe(before + 2)
    expect(commands).toEqual([{ type: 'job.kept', params: { job } }])
  })
})
