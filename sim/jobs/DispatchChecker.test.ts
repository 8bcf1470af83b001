/**
 * The dispatch checker on hand-made dispatch steps: a line poll matched a job no claim waits for
 * passes when the step ends it (or a claim is still parked on it), and fails when the poll is
 * left running with no claim parked, as a poll that would go on taking jobs for nobody; the
 * counts are per host incarnation and queue.
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { DispatchCommand, DispatchEvent } from '../../src/machines/DispatchProtocol.ts'
import { DispatchChecker } from './DispatchChecker.ts'

// The checker reads only the id of a kept job.
const job = { id: 'job-1' } as JobRecord
const start = (pollId: number): DispatchCommand => ({ type: 'linePoll.start', params: { pollId } })
const end = (pollId: number): DispatchCommand => ({ type: 'linePoll.end', params: { pollId } })
const kept: DispatchCommand = { type: 'job.kept', params: { job } }
const matched = (pollId: number): DispatchEvent => ({ type: 'linePoll.matched', pollId, job })

function checker(): { readonly checker: DispatchChecker; readonly failed: string[]; readonly step: (event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, incarnation?: number) => void } {
  const failed: string[] = []
  const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`) })
  return { checker: c, failed, step: (event, commands, incarnation = 0) => c.step('host-1', incarnation, 'q', event, commands, 1_000) }
}

describe('DispatchChecker', () => {
  it('a poll matched for nobody that the step ends passes; one left running with no claim parked fails', () => {
    const { failed, step } = checker()
    step({ type: 'claim.parked', claimId: 1 }, [start(1)])
    step({ type: 'claim.unparked', claimId: 1, handed: false }, [end(1)])
    step({ type: 'linePoll.stopped', pollId: 1 }, [])
    step({ type: 'claim.parked', claimId: 2 }, [start(2)])
    step({ type: 'claim.left', claimId: 2 }, [])
    step({ type: 'claim.unparked', claimId: 2, handed: false }, [])
    // Ended by the step that kept its job: the right answer.
    step(matched(2), [kept, end(2)])
    expect(failed).toEqual([])
    step({ type: 'claim.parked', claimId: 3 }, [start(3)])
    step({ type: 'claim.unparked', claimId: 3, handed: false }, [])
    // Matched for nobody and left running: the next pass's jobs would go to it for nobody.
    step(matched(3), [kept])
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(/^poll for nobody ends: job job-1 of q, matched to line poll 3 of host-1/)
  })

  it('a poll may stay for a claim still parked on it (handed a job, its wait not ended yet)', () => {
    const { failed, step } = checker()
    step({ type: 'claim.parked', claimId: 1 }, [start(1)])
    step(matched(1), [kept])
    expect(failed).toEqual([])
  })

  it('an ended poll matched later, and a poll of another incarnation, are not counted', () => {
    const { failed, step } = checker()
    step({ type: 'claim.parked', claimId: 1 }, [start(1)])
    step({ type: 'claim.unparked', claimId: 1, handed: false }, [end(1)])
    // Ended but not stopped yet: its Matching poll may still be matched.
    step(matched(1), [kept])
    step({ type: 'linePoll.stopped', pollId: 1 }, [])
    // The next incarnation's dispatch starts from nothing.
    step({ type: 'claim.parked', claimId: 1 }, [start(1)], 1)
    expect(failed).toEqual([])
  })
})
