/**
 * Each planted dispatch bug changes what the machine does on one short sequence of events, and
 * the unmutated machine does the right thing on the same sequence: a plant that changed nothing
 * could never be caught.
 */
import { describe, expect, it } from 'vitest'
import { dispatchMachine, type DispatchMachine } from '../../src/machines/DispatchMachine.ts'
import type { DispatchCommand, DispatchEvent } from '../../src/machines/DispatchProtocol.ts'
import { makeDispatchStepper } from '../../src/machines/DispatchStepper.ts'
import type { JobRecord } from '../../src/persistence/jobs/JobStore.ts'
import { type DispatchMutation, dispatchMutations, mutatedDispatchMachine } from './DispatchMutations.ts'

const job = { id: 'a', queue: 'q', state: 'processing', claimToken: 't' } as unknown as JobRecord

// Steps `events` on `machine`; the commands asked for and the last snapshot's context and value.
function run(machine: DispatchMachine, events: ReadonlyArray<DispatchEvent>) {
  const stepper = makeDispatchStepper(machine)
  let snapshot = stepper.start('q')
  const commands: DispatchCommand[] = []
  for (const event of events) {
    const [next, asked] = stepper.step(snapshot, event)
    snapshot = next
    commands.push(...asked)
  }
  return { commands: commands.map((command) => command.type), context: snapshot.context, value: snapshot.value }
}

const drainedWithClaim: ReadonlyArray<DispatchEvent> = [{ type: 'claim.queued', claimId: 1 }, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false }]

// For each plant: a sequence, and what must hold after it on the unmutated machine but not on the plant.
const cases: Record<DispatchMutation, { readonly events: ReadonlyArray<DispatchEvent>; readonly holds: (after: ReturnType<typeof run>) => boolean }> = {
  noPassBehindMatching: { events: [...drainedWithClaim, { type: 'matching.reached' }], holds: (after) => after.commands.includes('pass.request') },
  heldRowsUnheard: {
    events: [{ type: 'claim.queued', claimId: 1 }, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: true }, { type: 'store.quiet' }],
    holds: (after) => after.commands.includes('pass.request'),
  },
  passIgnoresForwarded: {
    events: [{ type: 'forwarded.arrived' }, { type: 'store.answered', generation: 0, asked: 1, claimed: 0, overlapped: false }, { type: 'matching.reached' }],
    holds: (after) => after.commands.includes('pass.request'),
  },
  setAsideClaimLost: {
    events: [{ type: 'claim.queued', claimId: 1 }, { type: 'claim.reserved', claimId: 1 }, { type: 'claim.released', claimId: 1 }],
    holds: (after) => after.context.waiting.includes(1),
  },
  drainedStaysDrained: { events: [...drainedWithClaim, { type: 'pass.started' }], holds: (after) => (after.value as { store: string }).store === 'serving' },
  parkedPollNotArmed: { events: [{ type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }], holds: (after) => after.commands.includes('linePoll.start') },
  matchedPollLingers: {
    // The parked claim got a job from the store and its handler has not started; then the line poll is matched for nobody.
    events: [{ type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }, { type: 'job.handed', job, claimId: 1 }, { type: 'claim.unparked', claimId: 1, handed: true }, { type: 'linePoll.matched', pollId: 1, job }],
    holds: (after) => after.commands.includes('linePoll.end') && after.context.linePolls.length === 0,
  },
  droppedWithClaimsInLine: { events: [{ type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }], holds: (after) => (after.value as { use: string }).use === 'holding' },
  slotFreedSilent: { events: [...drainedWithClaim, { type: 'slot.freed' }], holds: (after) => after.commands.includes('slot.announce') },
  partitionUnloadUnheard: {
    events: [{ type: 'partition.loaded', instance: '0#1' }, { type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }, { type: 'partition.unloaded', instance: '0#1' }],
    holds: (after) => after.commands.includes('claims.reroute'),
  },
  setAsidePassedBy: {
    events: [{ type: 'claim.queued', claimId: 1 }, { type: 'claim.reserved', claimId: 1 }, { type: 'pass.started' }, { type: 'claim.released', claimId: 1 }],
    holds: (after) => after.commands.includes('pass.request'),
  },
  staleDeliveryUnheard: { events: [{ type: 'forwarded.arrived' }, { type: 'delivery.stale' }], holds: (after) => after.commands.includes('pass.request') },
  passBesideKept: {
    events: [{ type: 'claim.heldTwo', own: { ...job, id: 'own', priority: 0 }, handed: { ...job, priority: 0 }, passBeside: true, throughMatching: false }],
    holds: (after) => after.commands.includes('claim.settleHead') && after.context.spare.length === 0,
  },
  headOfTwoKept: {
    events: [{ type: 'claim.heldTwo', own: { ...job, id: 'own', priority: 0 }, handed: { ...job, priority: 5 }, passBeside: false, throughMatching: false }],
    holds: (after) => after.context.spare.length === 1 && after.context.spare[0]?.id === 'own',
  },
  matchedHandedKept: {
    events: [{ type: 'claim.heldTwo', own: { ...job, id: 'own', priority: 0 }, handed: { ...job, priority: 0 }, passBeside: false, throughMatching: true }],
    holds: (after) => after.context.spare.length === 1 && after.context.spare[0]?.id === 'own',
  },
  closingKeepsHanded: {
    events: [{ type: 'claim.queued', claimId: 1 }, { type: 'engine.closing' }, { type: 'job.handed', job, claimId: null }],
    holds: (after) => after.commands.includes('job.release') && !after.commands.includes('claim.handOver'),
  },
}

describe('planted dispatch bugs', () => {
  for (const mutation of dispatchMutations) {
    it(`${mutation}: the machine gets its sequence right, the plant does not`, () => {
      const { events, holds } = cases[mutation]
      expect(holds(run(dispatchMachine, events))).toBe(true)
      expect(holds(run(mutatedDispatchMachine(mutation), events))).toBe(false)
    })
  }

  it('a job handed over still reaches the claim on every plant (they stall, they do not lose)', () => {
    for (const mutation of dispatchMutations) {
      const after = run(mutatedDispatchMachine(mutation), [{ type: 'claim.queued', claimId: 1 }, { type: 'job.handed', job, claimId: null }])
      expect(after.commands).toEqual(['claim.handOver'])
    }
  })
})
