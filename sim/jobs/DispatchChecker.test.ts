/**
 * The dispatch checker on hand-made dispatch steps: a line poll matched a job no claim waits for
 * passes when the step ends it (or a claim is still parked on it), and fails when the poll is
 * left running with no claim parked, as a poll that would go on taking jobs for nobody; the
 * counts are per host incarnation and queue. Once the last partition instance of a queue on an
 * engine unloads, the claims parked and jobs kept there must be let go within `letGoBoundMs`: the
 * step that hears the unload rerouting and releasing them passes, a claim left parked or a job
 * left kept past the bound fails, and an unload that leaves an instance loaded asks for nothing.
 * A claim answered a job while a job ahead of it in claim order was kept on its engine fails.
 * A newer dispatch of a queue beginning while the one before it holds a parked claim or a kept
 * job fails.
 */
import { describe, expect, it } from 'vitest'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import type { DispatchCommand, DispatchEvent } from '../../src/machines/DispatchProtocol.ts'
import type { JobOrder } from './ClaimOrderModel.ts'
import { DispatchChecker, letGoBoundMs } from './DispatchChecker.ts'

// The checker reads only the id of a kept job.
const job = { id: 'job-1' } as JobRecord
const start = (pollId: number): DispatchCommand => ({ type: 'linePoll.start', params: { pollId } })
const end = (pollId: number): DispatchCommand => ({ type: 'linePoll.end', params: { pollId } })
const kept: DispatchCommand = { type: 'job.kept', params: { job } }
const matched = (pollId: number): DispatchEvent => ({ type: 'linePoll.matched', pollId, job })

function checker(): { readonly checker: DispatchChecker; readonly failed: string[]; readonly step: (event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, incarnation?: number) => void } {
  const failed: string[] = []
  const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), orderOf: () => undefined })
  return { checker: c, failed, step: (event, commands, incarnation = 0) => c.step('host-1', incarnation, 'q', event, commands, 1_000) }
}

describe('DispatchChecker', () => {
  it('a newer dispatch of the queue while the one before it still holds a parked claim or a kept job fails; one that held nothing passes', () => {
    const failed: string[] = []
    const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), orderOf: () => undefined })
    // Dispatch 1 parks a claim, which unparks before dispatch 2 begins: nothing held.
    c.step('host-1', 0, 'q', { type: 'claim.parked', claimId: 1 }, [start(1)], 1_000, 1)
    c.step('host-1', 0, 'q', { type: 'claim.unparked', claimId: 1, handed: false }, [end(1)], 1_000, 1)
    c.step('host-1', 0, 'q', { type: 'claim.queued', claimId: 1 }, [], 2_000, 2)
    expect(failed).toEqual([])
    // Dispatch 2 parks claim 1 and keeps a job; dispatch 3 begins while both are there.
    c.step('host-1', 0, 'q', { type: 'claim.parked', claimId: 1 }, [start(1)], 2_000, 2)
    c.step('host-1', 0, 'q', matched(1), [kept], 2_000, 2)
    c.step('host-1', 0, 'q', { type: 'claim.queued', claimId: 1 }, [], 3_000, 3)
    expect(failed).toEqual([expect.stringMatching(/^dropped line held nothing: host-1 made a new dispatch of q at 3000 while the one before it still held 1 claim parked \(1\) and 1 job kept/)])
    // Steps of the dropped one afterwards are not counted against the new one.
    c.step('host-1', 0, 'q', { type: 'claim.unparked', claimId: 1, handed: false }, [], 3_500, 2)
    c.step('host-1', 0, 'q', { type: 'claim.queued', claimId: 2 }, [], 4_000, 4)
    expect(failed).toHaveLength(1)
  })

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

  describe('moved queue lets go', () => {
    function at(): { readonly failed: string[]; readonly step: (event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>, nowMs: number) => void } {
      const failed: string[] = []
      const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), orderOf: () => undefined })
      return { failed, step: (event, commands, nowMs) => c.step('host-1', 0, 'q', event, commands, nowMs) }
    }
    const loaded = (instance: string): DispatchEvent => ({ type: 'partition.loaded', instance })
    const unloaded = (instance: string): DispatchEvent => ({ type: 'partition.unloaded', instance })
    const release: DispatchCommand = { type: 'job.release', params: { job } }

    it('the step that hears the last unload rerouting the parked claims and releasing the kept jobs passes', () => {
      const { failed, step } = at()
      step(loaded('p0'), [], 0)
      step(loaded('p1'), [], 0)
      step({ type: 'claim.parked', claimId: 1 }, [start(1)], 10)
      step({ type: 'job.returned', job }, [kept], 20)
      // One instance of two unloads: the queue is still delivered here.
      step(unloaded('p0'), [], 100)
      step(unloaded('p1'), [{ type: 'claims.reroute', params: { claimIds: [1] } }, release], 200)
      step({ type: 'claim.unparked', claimId: 1, handed: false }, [end(1)], 200)
      expect(failed).toEqual([])
    })

    it('a claim left parked past the bound fails, and so does a job left kept', () => {
      const { failed, step } = at()
      step(loaded('p0'), [], 0)
      step({ type: 'claim.parked', claimId: 1 }, [start(1)], 10)
      step({ type: 'job.returned', job }, [kept], 20)
      step(unloaded('p0'), [], 100)
      // Its own wait ends a second after it parked; the next pass gives the job back.
      step({ type: 'claim.unparked', claimId: 1, handed: false }, [end(1)], 1_010)
      step({ type: 'pass.started' }, [release], 100 + letGoBoundMs + 1)
      expect(failed).toHaveLength(2)
      expect(failed[0]).toMatch(/^moved queue lets go: claim 1 of host-1 stayed parked in q's line from 100 until 1010/)
      expect(failed[1]).toMatch(/^moved queue lets go: job job-1 stayed kept on host-1 for q from 100 until 151/)
    })

    it('a claim that parks after the unload, while the queue is away, is not judged', () => {
      const { failed, step } = at()
      step(loaded('p0'), [], 0)
      step(unloaded('p0'), [], 100)
      step({ type: 'claim.parked', claimId: 2 }, [start(1)], 120)
      step({ type: 'claim.unparked', claimId: 2, handed: false }, [end(1)], 1_120)
      expect(failed).toEqual([])
    })
  })

  it('a claim answered a job while a job ahead of it is kept on its engine fails: of higher priority, or of its own claimed from before it; one behind it, or handed on, passes', () => {
    const failed: string[] = []
    const orders: Record<string, JobOrder> = {
      urgent: { priority: 5, place: null },
      early: { priority: 0, place: { dueMs: 100, seq: 1 } },
      high: { priority: 9, place: null },
      same: { priority: 5, place: { dueMs: 50, seq: 0 } },
      unplaced: { priority: 5, place: null },
      late: { priority: 0, place: { dueMs: 100, seq: 2 } },
      fromMatching: { priority: 0, place: { dueMs: Number.NEGATIVE_INFINITY, seq: 3 } },
      low: { priority: 0, place: null },
    }
    const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), orderOf: (id) => orders[id] })
    const step = (event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>) => c.step('host-1', 0, 'q', event, commands, 1_000)
    const keep = (id: string): DispatchCommand => ({ type: 'job.kept', params: { job: { id } as JobRecord } })
    step({ type: 'job.returned', job }, [keep('urgent'), keep('early')])
    // Of a higher priority, of the kept job's with no place to compare, or another line's: passes.
    for (const id of ['high', 'same', 'unplaced']) c.answered('host-1', 0, 'q', id, 1_000)
    c.answered('host-1', 1, 'q', 'low', 1_000)
    c.answered('host-1', 0, 'other', 'low', 1_000)
    expect(failed).toEqual([])
    c.answered('host-1', 0, 'q', 'low', 1_000)
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(/^no head kept: .*job low of q \(priority 0\).*job urgent \(priority 5\)/)
    step({ type: 'claim.queued', claimId: 7 }, [{ type: 'claim.handOver', params: { claimId: 7, job: { id: 'urgent' } as JobRecord } }])
    c.answered('host-1', 0, 'q', 'late', 1_000)
    expect(failed).toHaveLength(2)
    expect(failed[1]).toMatch(/job late of q \(priority 0, claimed from due 100, #2 in due order\).*job early \(priority 0, claimed from due 100, #1 in due order\)/)
    c.answered('host-1', 0, 'q', 'fromMatching', 1_000)
    expect(failed).toHaveLength(2)
    // Two jobs claimed from Matching are in Matching's order, which the checker does not know.
    orders.keptFromMatching = { priority: 0, place: { dueMs: Number.NEGATIVE_INFINITY, seq: 0 } }
    step({ type: 'job.returned', job }, [keep('keptFromMatching')])
    c.answered('host-1', 0, 'q', 'fromMatching', 1_000)
    expect(failed).toHaveLength(2)
    c.answered('host-1', 0, 'q', 'late', 1_000)
    expect(failed).toHaveLength(3)
  })

  it('a claim whose two jobs could not be settled at the store is not judged within a priority against the one it kept; any other answer is', () => {
    const failed: string[] = []
    const orders: Record<string, JobOrder> = {
      ahead: { priority: 0, place: { dueMs: 100, seq: 1 } },
      own: { priority: 0, place: { dueMs: 100, seq: 2 } },
      other: { priority: 0, place: { dueMs: 100, seq: 3 } },
    }
    const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), orderOf: (id) => orders[id] })
    const step = (event: DispatchEvent, commands: ReadonlyArray<DispatchCommand>) => c.step('host-1', 0, 'q', event, commands, 1_000)
    const record = (id: string) => ({ id }) as JobRecord
    const heldTwo = (passBeside: boolean): DispatchEvent => ({ type: 'claim.heldTwo', own: record('own'), handed: record('ahead'), passBeside, throughMatching: false })
    // Asked to settle at the store; the give-back failed, so the same two come back with no pass beside.
    step(heldTwo(true), [{ type: 'claim.settleHead', params: { own: record('own'), handed: record('ahead') } }])
    step(heldTwo(false), [{ type: 'claim.answer', params: { job: record('own') } }, { type: 'job.kept', params: { job: record('ahead') } }])
    c.answered('host-1', 0, 'q', 'own', 1_000)
    expect(failed).toEqual([])
    // Another answer while that job is kept is judged as ever.
    c.answered('host-1', 0, 'q', 'other', 1_000)
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatch(/^no head kept: .*job other of q.*job ahead/)
  })

  it('a claim that keeps the job ahead without having been asked to settle at the store fails', () => {
    const failed: string[] = []
    const orders: Record<string, JobOrder> = { ahead: { priority: 0, place: { dueMs: 100, seq: 1 } }, own: { priority: 0, place: { dueMs: 100, seq: 2 } } }
    const c = new DispatchChecker({ fail: (name, sentence) => failed.push(`${name}: ${sentence}`), orderOf: (id) => orders[id] })
    const record = (id: string) => ({ id }) as JobRecord
    c.step('host-1', 0, 'q', { type: 'claim.heldTwo', own: record('own'), handed: record('ahead'), passBeside: true, throughMatching: false }, [
      { type: 'claim.answer', params: { job: record('own') } },
      { type: 'job.kept', params: { job: record('ahead') } },
    ], 1_000)
    c.answered('host-1', 0, 'q', 'own', 1_000)
    expect(failed).toHaveLength(1)
  })
})
