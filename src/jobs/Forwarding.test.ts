/**
 * Forwarding, the owner's side: what becomes of a job the owner claimed for a forwarded poll when
 * the poll's wait was ended before the claim came back from the store. A poller that cancelled
 * will not run the job, so the owner gives it back at once; an owner that is closing still sends
 * it, since its poller still waits for it.
 */
import { expect, it } from 'vitest'
import type { JsonValue } from '../domain/Json.ts'
import { ManualClock } from '../kernel/Clock.ts'
import { Random } from '../kernel/Random.ts'
import type { Bus } from '../persistence/bus/Bus.ts'
import type { ClaimRef, JobRecord, JobStore } from '../persistence/jobs/JobStore.ts'
import { type Forwarding, makeForwarding } from './Forwarding.ts'
import type { QueueRouting } from './QueueRouting.ts'
import { settle } from '../../test/harness/settle.ts'

interface Owner {
  readonly forwarding: Forwarding
  readonly sent: Array<{ readonly to: string; readonly message: JsonValue }>
  readonly released: ClaimRef[]
  /** Answers the claim the owner has at the store for the poll it serves. */
  claimLands(job: JobRecord | null): void
}

function makeOwner(): Owner {
  const sent: Array<{ readonly to: string; readonly message: JsonValue }> = []
  const released: ClaimRef[] = []
  let land: ((job: JobRecord | null) => void) | null = null
  const bus = { send: async (to: string, message: JsonValue) => void sent.push({ to, message }) } as unknown as Bus
  const routing = { load: async () => 4, owns: () => true } as unknown as QueueRouting
  const forwarding = makeForwarding({
    hostId: 'owner',
    bus,
    clock: new ManualClock(1_700_000_000_000),
    random: Random.make(1),
    jobStore: {} as JobStore,
    routing,
    serveLocally: () => new Promise((resolve) => (land = resolve)),
    wakeLocal: () => {},
    release: (claim) => void released.push(claim),
    onDefect: (defect) => {
      throw defect
    },
  })
  return {
    forwarding,
    sent,
    released,
    claimLands(job) {
      if (land === null) throw new Error('no claim at the store')
      land(job)
    },
  }
}

const job = { id: 'job-1', queue: 'q', state: 'processing', claimToken: 'token-1' } as unknown as JobRecord

it("gives the job back when the poller's cancel arrived while the claim was at the store, and answers nothing", async () => {
  const owner = makeOwner()
  owner.forwarding.onMessage({ kind: 'poll', pollId: 'p1', from: 'poller', queue: 'q', waitMs: 1000, lazy: false })
  await settle()
  owner.forwarding.onMessage({ kind: 'cancel', pollId: 'p1' })
  owner.claimLands(job)
  await settle()
  expect(owner.released).toEqual([{ id: 'job-1', claimToken: 'token-1' }])
  expect(owner.sent).toEqual([])
})

it('sends the job to its poller when the claim lands while the owner closes', async () => {
  const owner = makeOwner()
  owner.forwarding.onMessage({ kind: 'poll', pollId: 'p1', from: 'poller', queue: 'q', waitMs: 1000, lazy: false })
  await settle()
  owner.forwarding.close()
  owner.claimLands(job)
  await settle()
  expect(owner.released).toEqual([])
  expect(owner.sent.map((sent) => [sent.to, (sent.message as { kind: string }).kind])).toEqual([['poller', 'claimed']])
})
