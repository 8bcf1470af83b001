/**
 * The dispatch machine stepped with XState's pure `initialTransition()` / `transition()`: each
 * test asserts the snapshot and the commands a step asks for. A property checks that the
 * stepper the runner uses gives the same snapshots and commands as `transition()`.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { initialTransition, transition } from 'xstate'
import type { JobRecord } from '../persistence/jobs/JobStore.ts'
import { type DispatchSnapshot, dispatchMachine, isDeliveredHere, isDrained, isEmpty, isMatchingHolding, isStoreServing } from './DispatchMachine.ts'
import { type DispatchCommand, type DispatchEvent, dispatchCommandsOf } from './DispatchProtocol.ts'
import { makeDispatchStepper } from './DispatchStepper.ts'

const job = (id: string): JobRecord => ({ id, queue: 'q', state: 'processing', claimToken: `t-${id}` }) as unknown as JobRecord

function start(): DispatchSnapshot {
  const [snapshot] = initialTransition(dispatchMachine, { queue: 'q' })
  return snapshot
}

function steps(snapshot: DispatchSnapshot, ...events: DispatchEvent[]): [DispatchSnapshot, DispatchCommand[]] {
  let current = snapshot
  const commands: DispatchCommand[] = []
  for (const event of events) {
    const [next, actions] = transition(dispatchMachine, current, event)
    current = next
    commands.push(...dispatchCommandsOf(actions))
  }
  return [current, commands]
}

describe('DispatchMachine', () => {
  it('hands a job to the claim waiting longest, keeps one nobody waits for for the next claim, and gives it back at the next pass', () => {
    const [queued] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.queued', claimId: 2 })
    expect(queued.context.waiting).toEqual([1, 2])
    const [handed, commands] = steps(queued, { type: 'job.handed', job: job('a'), claimId: null })
    expect(commands).toEqual([{ type: 'claim.handOver', params: { claimId: 1, job: job('a') } }])
    expect(handed.context.waiting).toEqual([2])
    const [kept, keptCommands] = steps(handed, { type: 'claim.left', claimId: 2 }, { type: 'job.handed', job: job('b'), claimId: null })
    // Kept: the runner has a pass run within the hold bound, which gives it back if no claim joined.
    expect(keptCommands).toEqual([{ type: 'job.kept', params: { job: job('b') } }])
    expect(kept.context.spare).toEqual([job('b')])
    const [taken, takenCommands] = steps(kept, { type: 'claim.queued', claimId: 3 })
    expect(takenCommands).toEqual([{ type: 'claim.handOver', params: { claimId: 3, job: job('b') } }])
    expect(taken.context.spare).toEqual([])
    expect(taken.context.waiting).toEqual([])
    // No claim joined before the pass, a forwarded poll or the line closing: the claim goes back to the store.
    for (const giveBack of [{ type: 'pass.started' }, { type: 'forwarded.arrived' }, { type: 'kept.expired' }] as const) {
      const [released, releaseCommands] = steps(kept, giveBack)
      expect(releaseCommands).toEqual([{ type: 'job.release', params: { job: job('b') } }])
      expect(released.context.spare).toEqual([])
    }
  })

  it('a claim holding two answers the one ahead and hands on or keeps the other; with their order the store’s and nobody waiting, it settles the head at the store', () => {
    const ranked = (id: string, priority: number): JobRecord => ({ ...job(id), priority }) as JobRecord
    const [own, urgent, plain] = [ranked('own', 0), ranked('urgent', 5), ranked('plain', 0)]
    const heldTwo = (handed: JobRecord, passBeside: boolean, throughMatching = false): DispatchEvent => ({ type: 'claim.heldTwo', own, handed, passBeside, throughMatching })
    // Handed by an enqueue (no pass beside): a higher priority is ahead, else the claim's own.
    const [keptUrgent, urgentCommands] = steps(start(), heldTwo(urgent, false))
    expect(urgentCommands).toEqual([
      { type: 'claim.answer', params: { job: urgent } },
      { type: 'job.kept', params: { job: own } },
    ])
    expect(keptUrgent.context.spare).toEqual([own])
    const [, plainCommands] = steps(start(), heldTwo(plain, false))
    expect(plainCommands).toEqual([
      { type: 'claim.answer', params: { job: own } },
      { type: 'job.kept', params: { job: plain } },
    ])
    // Handed through Matching (a line poll's task): first within its priority, as the store orders a job with Matching.
    const [, matchedCommands] = steps(start(), heldTwo(plain, false, true))
    expect(matchedCommands).toEqual([
      { type: 'claim.answer', params: { job: plain } },
      { type: 'job.kept', params: { job: own } },
    ])
    const [, lowerCommands] = steps(start(), heldTwo(ranked('lower', -1), false, true))
    expect(lowerCommands).toEqual([
      { type: 'claim.answer', params: { job: own } },
      { type: 'job.kept', params: { job: ranked('lower', -1) } },
    ])
    // A pass beside its statement, nobody waiting: nothing is kept; the head comes from the store.
    const [settled, settleCommands] = steps(start(), heldTwo(urgent, true))
    expect(settleCommands).toEqual([{ type: 'claim.settleHead', params: { own, handed: urgent } }])
    expect(settled.context.spare).toEqual([])
    expect(isEmpty(settled)).toBe(true)
    // A pass beside it, a claim waiting: that claim takes the job behind.
    const [handed, handedCommands] = steps(start(), { type: 'claim.queued', claimId: 1 }, heldTwo(urgent, true))
    expect(handedCommands).toEqual([
      { type: 'claim.answer', params: { job: urgent } },
      { type: 'claim.handOver', params: { claimId: 1, job: own } },
    ])
    expect(handed.context.waiting).toEqual([])
  })

  it('a claim set aside for an enqueue gets its job; released, it is first in line again', () => {
    const [reserved] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.queued', claimId: 2 }, { type: 'claim.reserved', claimId: 1 })
    expect(reserved.context.waiting).toEqual([2])
    expect(reserved.context.reserved).toEqual([{ claimId: 1, generation: 0 }])
    const [, commands] = steps(reserved, { type: 'job.handed', job: job('a'), claimId: 1 })
    expect(commands).toEqual([{ type: 'claim.handOver', params: { claimId: 1, job: job('a') } }])
    const [released, quiet] = steps(reserved, { type: 'claim.released', claimId: 1 })
    expect(released.context.waiting).toEqual([1, 2])
    expect(quiet).toEqual([])
    // A set-aside claim that left meanwhile: its job goes to the next claim in line.
    const [, onward] = steps(reserved, { type: 'claim.left', claimId: 1 }, { type: 'job.handed', job: job('a'), claimId: 1 })
    expect(onward).toEqual([{ type: 'claim.handOver', params: { claimId: 2, job: job('a') } }])
  })

  it('a set-aside claim that a pass passed by asks for another pass as it comes back to the line', () => {
    const [reserved] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.reserved', claimId: 1 })
    const [, commands] = steps(reserved, { type: 'pass.started' }, { type: 'claim.released', claimId: 1 })
    expect(commands).toEqual([{ type: 'pass.request', params: {} }])
  })

  it('a closing engine gives back what it keeps, what is handed to it and what a claim passes on; the claim set aside goes back in line', () => {
    const [kept] = steps(start(), { type: 'job.handed', job: job('a'), claimId: null })
    const [closing, closingCommands] = steps(kept, { type: 'claim.queued', claimId: 1 }, { type: 'claim.queued', claimId: 2 }, { type: 'claim.reserved', claimId: 2 }, { type: 'engine.closing' })
    // The kept job went to the first claim to join; nothing is kept as the engine closes.
    expect(closingCommands).toEqual([{ type: 'claim.handOver', params: { claimId: 1, job: job('a') } }])
    const [after, commands] = steps(closing, { type: 'job.handed', job: job('b'), claimId: 2 })
    expect(commands).toEqual([{ type: 'job.release', params: { job: job('b') } }])
    expect(after.context.waiting).toEqual([2])
    expect(after.context.reserved).toEqual([])
    const [, keptThenClosing] = steps(start(), { type: 'job.handed', job: job('c'), claimId: null }, { type: 'engine.closing' })
    expect(keptThenClosing).toEqual([
      { type: 'job.kept', params: { job: job('c') } },
      { type: 'job.release', params: { job: job('c') } },
    ])
    // A job a claim holding another passes on, even with a claim in line: back to the store.
    const [, returnedCommands] = steps(after, { type: 'job.returned', job: job('d') })
    expect(returnedCommands).toEqual([{ type: 'job.release', params: { job: job('d') } }])
    const [, twoCommands] = steps(after, { type: 'claim.heldTwo', own: job('e'), handed: job('f'), passBeside: false, throughMatching: false })
    expect(twoCommands).toEqual([
      { type: 'claim.answer', params: { job: job('e') } },
      { type: 'job.release', params: { job: job('f') } },
    ])
  })

  it('a stale delivery asks for a pass while claims or forwarded polls wait, and for nothing otherwise', () => {
    const [, forwarded] = steps(start(), { type: 'forwarded.arrived' }, { type: 'delivery.stale' })
    expect(forwarded).toEqual([{ type: 'pass.request', params: {} }])
    const [, own] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'delivery.stale' })
    expect(own).toEqual([{ type: 'pass.request', params: {} }])
    const [, none] = steps(start(), { type: 'delivery.stale' })
    expect(none).toEqual([])
  })

  it('drained until a pass starts; a short answer from before the pass does not drain', () => {
    const serving = start()
    expect(isStoreServing(serving)).toBe(true)
    const [drained] = steps(serving, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false })
    expect(isDrained(drained)).toBe(true)
    const [passed] = steps(drained, { type: 'pass.started' })
    expect(isDrained(passed)).toBe(false)
    expect(passed.context.generation).toBe(1)
    const [stale] = steps(passed, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false })
    expect(isDrained(stale)).toBe(false)
  })

  it('a short answer beside another head statement asks for a pass once none is out, while claims wait', () => {
    const besideShort = { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: true } as const
    const [held] = steps(start(), { type: 'claim.queued', claimId: 1 }, besideShort)
    expect(held.context.heldBehind).toBe(true)
    expect(isDrained(held)).toBe(true)
    const [after, commands] = steps(held, { type: 'store.quiet' })
    expect(commands).toEqual([{ type: 'pass.request', params: {} }])
    expect(after.context.heldBehind).toBe(false)
    // Noted in any generation and state: a short answer from before a pass, or while drained.
    const [passed] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'pass.started' }, besideShort)
    expect(passed.context.heldBehind).toBe(true)
    // A pass that starts after it finds those rows itself (or notes again what it passes over).
    const [served, noPass] = steps(held, { type: 'pass.started' }, { type: 'store.quiet' })
    expect(served.context.heldBehind).toBe(false)
    expect(noPass).toEqual([])
    const [drainedTwice] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false }, besideShort)
    expect(drainedTwice.context.heldBehind).toBe(true)
    // No claim waits any more: nothing to serve, and the note goes.
    const [left, none] = steps(held, { type: 'claim.left', claimId: 1 }, { type: 'store.quiet' })
    expect(none).toEqual([])
    expect(left.context.heldBehind).toBe(false)
    // A full answer beside another, or a short one alone, notes nothing.
    const [full] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'store.answered', generation: 0, asked: 1, claimed: 1, overlapped: true })
    const [alone] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false })
    expect([full.context.heldBehind, alone.context.heldBehind]).toEqual([false, false])
  })

  it('a job through Matching leaves drained and asks for a pass only while claims still wait', () => {
    const [drained] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false })
    const [after, commands] = steps(drained, { type: 'matching.reached' })
    expect(isDrained(after)).toBe(false)
    expect(commands).toEqual([{ type: 'pass.request', params: {} }])
    const [idle] = steps(start(), { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false })
    const [, none] = steps(idle, { type: 'matching.reached' })
    expect(none).toEqual([])
  })

  it('parked claims share one line poll until a task comes through Matching, then get one each', () => {
    const [one, started] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }, { type: 'claim.queued', claimId: 2 }, { type: 'claim.parked', claimId: 2 }, { type: 'claim.queued', claimId: 3 }, { type: 'claim.parked', claimId: 3 })
    expect(started).toEqual([{ type: 'linePoll.start', params: { pollId: 1 } }])
    expect(one.context.linePolls).toEqual([1])
    const [perWorker, matched] = steps(one, { type: 'linePoll.matched', pollId: 1, job: job('a') })
    expect((perWorker.value as { line: string }).line).toBe('pollPerWorker')
    expect(matched).toEqual([
      { type: 'claim.handOver', params: { claimId: 1, job: job('a') } },
      { type: 'linePoll.start', params: { pollId: 2 } },
      { type: 'linePoll.start', params: { pollId: 3 } },
    ])
    // The handed claim unparks; its handler's start ends the poll beyond the two still parked.
    const [started2, ended] = steps(perWorker, { type: 'claim.unparked', claimId: 1, handed: true }, { type: 'handler.started' })
    expect(ended).toEqual([{ type: 'linePoll.end', params: { pollId: 3 } }])
    expect(started2.context.linePolls).toEqual([1, 2])
    // A whole idle wait: back to one poll, and this one ends as it is not the last.
    const [single, idled] = steps(started2, { type: 'linePoll.idled', pollId: 2 })
    expect((single.value as { line: string }).line).toBe('onePoll')
    expect(idled).toEqual([{ type: 'linePoll.end', params: { pollId: 2 } }])
    // A job from the store: one poll will do.
    const [, fromStore] = steps(perWorker, { type: 'job.handed', job: job('b'), claimId: null })
    expect(fromStore).toEqual([{ type: 'claim.handOver', params: { claimId: 2, job: job('b') } }])
  })

  it('a line poll matched with nobody in line ends the polls beyond the parked claims: they take tasks for nobody', () => {
    // Two parked claims, a poll each; both are handed jobs, and their handlers have not started
    // (a local queue holds them while its handlers are busy).
    const [perWorker] = steps(
      start(),
      { type: 'claim.queued', claimId: 1 },
      { type: 'claim.parked', claimId: 1 },
      { type: 'claim.queued', claimId: 2 },
      { type: 'claim.parked', claimId: 2 },
      { type: 'linePoll.matched', pollId: 1, job: job('a') },
      { type: 'linePoll.matched', pollId: 2, job: job('b') },
      { type: 'claim.unparked', claimId: 1, handed: true },
      { type: 'claim.unparked', claimId: 2, handed: true },
    )
    expect(perWorker.context.linePolls).toEqual([1, 2])
    // A third task matched: kept for the next claim, and no poll runs on for nobody.
    const [kept, commands] = steps(perWorker, { type: 'linePoll.matched', pollId: 2, job: job('c') })
    expect(kept.context.spare).toEqual([job('c')])
    expect(commands).toEqual([
      { type: 'job.kept', params: { job: job('c') } },
      { type: 'linePoll.end', params: { pollId: 2 } },
      { type: 'linePoll.end', params: { pollId: 1 } },
    ])
    expect(kept.context.linePolls).toEqual([])
    expect(kept.context.closingPolls).toEqual([1, 2])
  })

  it('holds something until the last claim, kept job and line poll are gone: then it is empty and may be dropped', () => {
    expect(isEmpty(start())).toBe(true)
    const [parked] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 })
    expect(isEmpty(parked)).toBe(false)
    // The claim leaves; its line poll is ended but its loop has not answered: still holding.
    const [closing, ended] = steps(parked, { type: 'claim.unparked', claimId: 1, handed: false }, { type: 'claim.left', claimId: 1 })
    expect(ended).toEqual([{ type: 'linePoll.end', params: { pollId: 1 } }])
    expect(closing.context.closingPolls).toEqual([1])
    expect(isEmpty(closing)).toBe(false)
    const [stopped] = steps(closing, { type: 'linePoll.stopped', pollId: 1 })
    expect(isEmpty(stopped)).toBe(true)
    // A kept job, a forwarded poll, a lazy poll each hold it.
    for (const event of [{ type: 'job.handed', job: job('a'), claimId: null }, { type: 'forwarded.arrived' }, { type: 'lazyPoll.started' }] as const) {
      const [held] = steps(stopped, event)
      expect(isEmpty(held), event.type).toBe(false)
    }
    // Passes and store answers do not.
    const [passed] = steps(stopped, { type: 'pass.started' }, { type: 'store.answered', generation: 1, asked: 1, claimed: 0, overlapped: false })
    expect(isEmpty(passed)).toBe(true)
  })

  it('a failed line poll fails every parked claim', () => {
    const [parked] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }, { type: 'claim.queued', claimId: 2 }, { type: 'claim.parked', claimId: 2 })
    const error = new Error('down')
    const [after, commands] = steps(parked, { type: 'linePoll.failed', pollId: 1, error })
    expect(commands).toEqual([{ type: 'claims.fail', params: { claimIds: [1, 2], error } }])
    expect(after.context.linePolls).toEqual([])
  })

  it('forwarded polls put Matching in charge until the last one leaves', () => {
    const [holding] = steps(start(), { type: 'forwarded.arrived' }, { type: 'forwarded.arrived' })
    expect(isMatchingHolding(holding)).toBe(true)
    expect(isStoreServing(holding)).toBe(false)
    const [still] = steps(holding, { type: 'forwarded.left' })
    expect(isMatchingHolding(still)).toBe(true)
    const [back] = steps(still, { type: 'forwarded.left' })
    expect(isMatchingHolding(back)).toBe(false)
    expect(back.context.forwardedWaiting).toBe(0)
  })

  it('delivers here while a partition instance of the queue is loaded; when the last unloads, parked claims are rerouted, kept jobs go back and the store serves again', () => {
    const [loaded] = steps(start(), { type: 'partition.loaded', instance: '0#1' }, { type: 'partition.loaded', instance: '1#2' })
    expect(isDeliveredHere(loaded)).toBe(true)
    expect(loaded.context.partitions).toEqual(['0#1', '1#2'])
    // Two claims park on the line poll after the store answered short: the store is drained.
    const [busy] = steps(
      loaded,
      { type: 'claim.queued', claimId: 1 },
      { type: 'claim.queued', claimId: 2 },
      { type: 'store.answered', generation: 0, asked: 2, claimed: 0, overlapped: false },
      { type: 'claim.parked', claimId: 1 },
      { type: 'claim.parked', claimId: 2 },
    )
    expect(busy.context.parked).toEqual([1, 2])
    expect(isDrained(busy)).toBe(true)
    const [one, oneCommands] = steps(busy, { type: 'partition.unloaded', instance: '0#1' })
    expect(isDeliveredHere(one)).toBe(true)
    expect(oneCommands).toEqual([])
    // An instance this dispatch never heard of changes nothing.
    const [, strayCommands] = steps(one, { type: 'partition.unloaded', instance: '7#9' })
    expect(strayCommands).toEqual([])
    const [gone, goneCommands] = steps(one, { type: 'partition.unloaded', instance: '1#2' })
    expect(isDeliveredHere(gone)).toBe(false)
    expect(gone.context.partitions).toEqual([])
    expect(goneCommands).toEqual([{ type: 'claims.reroute', params: { claimIds: [1, 2] } }])
    expect(isDrained(gone)).toBe(false)
    // A job kept for nobody when the last instance unloads goes back to the store.
    const [kept] = steps(start(), { type: 'partition.loaded', instance: '0#1' }, { type: 'job.handed', job: job('x'), claimId: null })
    expect(kept.context.spare).toEqual([job('x')])
    const [released, releaseCommands] = steps(kept, { type: 'partition.unloaded', instance: '0#1' })
    expect(releaseCommands).toEqual([{ type: 'job.release', params: { job: job('x') } }])
    expect(released.context.spare).toEqual([])
    // Loaded again (membership gave the queue back): delivered here once more.
    const [back] = steps(gone, { type: 'partition.loaded', instance: '0#3' })
    expect(isDeliveredHere(back)).toBe(true)
  })

  it('while the store serves the queue, the line’s one poll stays through a handler and the next claim parks on it again', () => {
    const [parked, parkCommands] = steps(start(), { type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 })
    expect(parkCommands).toEqual([{ type: 'linePoll.start', params: { pollId: 1 } }])
    const [running, runCommands] = steps(parked, { type: 'job.handed', job: job('a'), claimId: null }, { type: 'claim.unparked', claimId: 1, handed: true }, { type: 'handler.started' })
    expect(runCommands).toEqual([{ type: 'claim.handOver', params: { claimId: 1, job: job('a') } }])
    expect(running.context.linePolls).toEqual([1])
    const [again, againCommands] = steps(running, { type: 'claim.queued', claimId: 2 }, { type: 'claim.parked', claimId: 2 })
    expect(againCommands).toEqual([])
    expect(again.context.parked).toEqual([2])
    // With nobody parked, it ends once it waited its whole time for nothing, or once a poll of another engine waits here.
    const [, idledCommands] = steps(running, { type: 'linePoll.idled', pollId: 1 })
    expect(idledCommands).toEqual([{ type: 'linePoll.end', params: { pollId: 1 } }])
    const [, forwardedCommands] = steps(running, { type: 'forwarded.arrived' })
    expect(forwardedCommands).toEqual([{ type: 'linePoll.end', params: { pollId: 1 } }])
    // A worker stopping ends it.
    const [, stoppingCommands] = steps(running, { type: 'worker.stopping' })
    expect(stoppingCommands).toEqual([{ type: 'linePoll.end', params: { pollId: 1 } }])
    // With a claim parked on it, the last poll keeps polling after a whole wait.
    const [, parkedIdleCommands] = steps(parked, { type: 'linePoll.idled', pollId: 1 })
    expect(parkedIdleCommands).toEqual([])
    // While Matching holds the queue (polls of other engines wait), a handler's start ends it.
    const [holding] = steps(parked, { type: 'forwarded.arrived' })
    const [, heldCommands] = steps(holding, { type: 'job.handed', job: job('b'), claimId: null }, { type: 'claim.unparked', claimId: 1, handed: true }, { type: 'handler.started' })
    expect(heldCommands).toEqual([
      { type: 'claim.handOver', params: { claimId: 1, job: job('b') } },
      { type: 'linePoll.end', params: { pollId: 1 } },
    ])
  })

  it('the stepper gives the same snapshots and commands as transition()', () => {
    const seed = Number(process.env.PROPERTY_SEED ?? Date.now() % 1_000_000)
    console.log(`dispatch stepper property: PROPERTY_SEED=${seed}`)
    const claim = fc.integer({ min: 1, max: 4 })
    const event: fc.Arbitrary<DispatchEvent> = fc.oneof(
      claim.map((claimId) => ({ type: 'claim.queued', claimId }) as const),
      claim.map((claimId) => ({ type: 'claim.left', claimId }) as const),
      claim.map((claimId) => ({ type: 'claim.reserved', claimId }) as const),
      claim.map((claimId) => ({ type: 'claim.released', claimId }) as const),
      claim.map((claimId) => ({ type: 'claim.parked', claimId }) as const),
      fc.tuple(claim, fc.boolean()).map(([claimId, handed]) => ({ type: 'claim.unparked', claimId, handed }) as const),
      fc.tuple(fc.constantFrom('a', 'b'), fc.option(claim, { nil: null })).map(([id, claimId]) => ({ type: 'job.handed', job: job(id), claimId }) as const),
      fc.constantFrom('a', 'b').map((id) => ({ type: 'job.returned', job: job(id) }) as const),
      fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()).map(([urgent, passBeside, throughMatching]) => ({ type: 'claim.heldTwo', own: job('a'), handed: { ...job('b'), priority: urgent ? 5 : 0 }, passBeside, throughMatching }) as const),
      fc.integer({ min: 1, max: 4 }).map((pollId) => ({ type: 'linePoll.matched', pollId, job: job('m') }) as const),
      fc.integer({ min: 1, max: 4 }).map((pollId) => ({ type: 'linePoll.idled', pollId }) as const),
      fc.integer({ min: 1, max: 4 }).map((pollId) => ({ type: 'linePoll.stopped', pollId }) as const),
      fc.record({ generation: fc.integer({ min: 0, max: 2 }), asked: fc.integer({ min: 1, max: 3 }), claimed: fc.integer({ min: 0, max: 3 }), overlapped: fc.boolean() }).map((answer) => ({ type: 'store.answered', ...answer }) as const),
      fc.constantFrom('0#1', '1#2').map((instance) => ({ type: 'partition.loaded', instance }) as const),
      fc.constantFrom('0#1', '1#2').map((instance) => ({ type: 'partition.unloaded', instance }) as const),
      fc.constantFrom<DispatchEvent>({ type: 'handler.started' }, { type: 'worker.stopping' }, { type: 'forwarded.arrived' }, { type: 'forwarded.left' }, { type: 'lazyPoll.started' }, { type: 'lazyPoll.ended' }, { type: 'pass.started' }, { type: 'matching.reached' }, { type: 'kept.expired' }, { type: 'engine.closing' }, { type: 'delivery.stale' }, { type: 'store.quiet' }),
    )
    const stepper = makeDispatchStepper(dispatchMachine)
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        let expected = start()
        let actual = stepper.start('q')
        for (const next of events) {
          const [snapshot, actions] = transition(dispatchMachine, expected, next)
          const [stepped, commands] = stepper.step(actual, next)
          expect(stepped.value).toEqual(snapshot.value)
          expect(stepped.context).toEqual(snapshot.context)
          expect(commands).toEqual(dispatchCommandsOf(actions))
          expected = snapshot
          actual = stepped
        }
      }),
      { seed, numRuns: 200 },
    )
  })
})
