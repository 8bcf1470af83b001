/**
 * A claim whose own statement is at the store, and a due-time pass that starts meanwhile and
 * claims a job for it too (the claim waits in line while its statement is out). The two
 * statements run side by side; on PostgreSQL, where a claim passes over rows another
 * transaction holds, either may take the head. The claim must answer the head of the two, never
 * the job behind it: on PostgreSQL a due signal (the NOTIFY of an enqueue that had already
 * returned) reached the engine while a lone `claim()` was at the store, and the claim answered a
 * priority-0 job while a priority-7 one was due, keeping that one for the next claim.
 *
 * The pass's answer may also come back after the claim's own: the claim waits for it in line.
 * Before, it answered the job behind and the head was kept for the next claim (which, on a
 * clock moved past the kept claim's deadline before the pass that gives it back, cost the head
 * an attempt it never ran; or, with only one job due, the claim answered none).
 *
 * Where the give-back of both fails (the store unreachable), or where the job handed over came
 * from an enqueue of this engine (no pass beside it), the claim answers the one ahead as far as
 * the two records tell (the higher priority) and keeps the other for the next claim.
 *
 * A job kept on the engine for its next claim (passed on by a claim holding two) goes to the
 * next lone claim even when the store shows a job with Matching: it is ahead of that one, and
 * polling Matching instead would answer the job behind while the kept one waits for a pass to
 * give it back.
 *
 * One engine on the memory stores whose `claimDue` statements (and, in the last case, one look
 * at the rows with Matching) are held at gates, so the statements run and answer in the order
 * each test needs, on a ManualClock that does not move; no sleeps: waits are on conditions,
 * bounded by event-loop turns.
 */
import { expect, it } from 'vitest'
import { ManualClock, Random } from '../src/index.ts'
import { Unavailable } from '../src/domain/errors.ts'
import { makeMatchbox } from '../src/jobs/Matchbox.ts'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { makeMemoryJobStore } from '../src/persistence/jobs/MemoryJobStore.ts'
import { makeMemoryStore } from '../src/persistence/queues/MemoryStore.ts'
import { makeGate } from './harness/gate.ts'
import { settle, until } from './harness/settle.ts'

type ClaimDue = (inner: JobStore, params: Parameters<JobStore['claimDue']>[0]) => ReturnType<JobStore['claimDue']>

type DeliverableCount = (inner: JobStore, params: Parameters<JobStore['deliverableCount']>[0]) => ReturnType<JobStore['deliverableCount']>

// One engine on the memory stores whose `claimDue` goes through `claimDue` (given the real one),
// whose `release` fails while `refuseRelease()` says so, and whose `deliverableCount` goes
// through `deliverableCount`, with a priority-0 job due.
async function soloWithOneJob(claimDue: ClaimDue, refuseRelease: () => boolean = () => false, deliverableCount: DeliverableCount = (inner, params) => inner.deliverableCount(params)) {
  const store = makeMemoryStore()
  const inner = makeMemoryJobStore({ queueRanges: store })
  const jobStore: JobStore = {
    ...inner,
    claimDue: (params) => claimDue(inner, params),
    release: async (params) => {
      if (refuseRelease()) throw new Unavailable({ operation: 'release', detail: 'the connection dropped', maybeCommitted: false })
      return inner.release(params)
    },
    deliverableCount: (params) => deliverableCount(inner, params),
  }
  const clock = new ManualClock(1_700_000_000_000)
  const mb = makeMatchbox({ hostId: 'solo', store, jobStore, clock, random: Random.make(7), closeStores: () => store.close() })
  const q = mb.queue('q')
  const behind = await q.enqueue('older, priority 0')
  await mb.idle()
  return { mb, q, behind }
}

// As `soloWithOneJob`, with a priority-7 job due too, enqueued second (the head).
async function soloWithTwoJobs(claimDue: ClaimDue, refuseRelease?: () => boolean) {
  const solo = await soloWithOneJob(claimDue, refuseRelease)
  const head = await solo.q.enqueue('newer, priority 7', { priority: 7 })
  await solo.mb.idle()
  return { ...solo, head }
}

// A `claimDue` that holds the next call at `gate` before it runs, once `holdNext` is set.
function holdingNext(gate: ReturnType<typeof makeGate>): { readonly claimDue: ClaimDue; holdNext(): void } {
  let hold = false
  return {
    claimDue: async (inner, params) => {
      if (hold) {
        hold = false
        await gate.pass()
      }
      return inner.claimDue(params)
    },
    holdNext: () => (hold = true),
  }
}

// A claim of `q` whose statement is held at `gate` while an enqueue hands it a priority-7 job (the
// job is inserted already claimed for the claim waiting in line): the claim, answered once the
// gate opens, and the enqueued job's id.
async function claimHandedUrgent(q: Awaited<ReturnType<typeof soloWithOneJob>>['q'], held: ReturnType<typeof holdingNext>, gate: ReturnType<typeof makeGate>) {
  held.holdNext()
  gate.close()
  const claiming = q.claim()
  await until(() => gate.held() === 1, 'the claim’s statement is at the store')
  const head = await q.enqueue('newer, priority 7', { priority: 7 })
  return { claiming, head }
}

it('a lone claim at the store while a due-time pass claims for it too answers the head in claim order', async () => {
  const gate = makeGate()
  const held = holdingNext(gate)
  const { mb, q, behind, head } = await soloWithTwoJobs(held.claimDue)
  held.holdNext()
  gate.close()
  const claiming = q.claim()
  await until(() => gate.held() === 1, 'the claim’s statement is at the store')
  // A lazy claim of another queue runs a due-time pass over every queue, as a due signal would;
  // it claims the head for the claim waiting in line.
  expect(await mb.queue('other').claim()).toBeNull()
  gate.open()
  const claimed = await claiming
  expect(claimed?.id).toBe(head)
  expect(claimed?.attempts).toBe(1)

  // The job behind the head is pending again, its attempt given back, and the next claim takes it.
  expect(await q.getJob(behind)).toMatchObject({ state: 'pending', attempts: 0 })
  expect((await q.claim())?.id).toBe(behind)
  await mb.close()
})

it('a lone claim whose statement answers before the pass’s claim for it waits for that answer and answers the head', async () => {
  // The claim's statement waits at `ownGate` before it runs; the pass's runs, then its answer
  // waits at `passGate`. Every later statement goes through.
  const ownGate = makeGate()
  const passGate = makeGate()
  let calls = 0
  let holding = false
  let ownAnswered = false
  const { mb, q, behind, head } = await soloWithTwoJobs(async (inner, params) => {
    const call = holding ? ++calls : 0
    if (call === 1) await ownGate.pass()
    const claimed = await inner.claimDue(params)
    if (call === 1) ownAnswered = true
    if (call === 2) await passGate.pass()
    return claimed
  })

  holding = true
  ownGate.close()
  passGate.close()
  const claiming = q.claim()
  await until(() => ownGate.held() === 1, 'the claim’s statement is at the store')
  // A pass over every queue claims the head for the claim in line; its answer is held.
  const other = mb.queue('other').claim()
  await until(() => passGate.held() === 1, 'the pass’s claim took the head and its answer is on its way')
  // The claim's own statement takes the job behind and answers first.
  ownGate.open()
  await until(() => ownAnswered, 'the claim’s statement answered')
  await settle()
  passGate.open()
  const claimed = await claiming
  expect(claimed?.id).toBe(head)
  expect(await other).toBeNull()
  expect(await q.getJob(behind)).toMatchObject({ state: 'pending', attempts: 0 })
  expect((await q.claim())?.id).toBe(behind)
  await mb.close()
})

it('a claim holding the head and the job behind it whose give-back fails answers the head and keeps the other for the next claim', async () => {
  const gate = makeGate()
  const held = holdingNext(gate)
  let refuse = false
  const { mb, q, behind, head } = await soloWithTwoJobs(held.claimDue, () => refuse)
  held.holdNext()
  gate.close()
  const claiming = q.claim()
  await until(() => gate.held() === 1, 'the claim’s statement is at the store')
  // The pass claims the head for the claim in line; the claim's own statement then takes the job
  // behind, and the give-back of both (so that the store answers the head) fails.
  refuse = true
  expect(await mb.queue('other').claim()).toBeNull()
  gate.open()
  const claimed = await claiming
  refuse = false
  expect(claimed?.id).toBe(head)
  // Kept for the next claim, which takes it without a statement.
  const next = await q.claim()
  expect(next?.id).toBe(behind)
  expect(next?.attempts).toBe(1)
  await mb.close()
})

it('a claim at the store handed a job of higher priority by an enqueue answers that job and keeps its own for the next claim', async () => {
  const gate = makeGate()
  const held = holdingNext(gate)
  const { mb, q, behind } = await soloWithOneJob(held.claimDue)
  const { claiming, head } = await claimHandedUrgent(q, held, gate)
  gate.open()
  const claimed = await claiming
  expect(claimed?.id).toBe(head)
  expect((await q.claim())?.id).toBe(behind)
  await mb.close()
})

it('a lone claim takes the job kept on its engine before it polls Matching for one with Matching', async () => {
  const gate = makeGate()
  const held = holdingNext(gate)
  // The second claim's look at the store waits at `countGate`, and then shows one row with
  // Matching (another engine's job whose task a poll elsewhere is taking, say).
  const countGate = makeGate()
  let holdCount = false
  const { mb, q, behind } = await soloWithOneJob(held.claimDue, undefined, async (inner, params) => {
    if (!holdCount) return inner.deliverableCount(params)
    holdCount = false
    await countGate.pass()
    return (await inner.deliverableCount(params)) + 1
  })
  // The second claim is looking at the store while the first one runs.
  holdCount = true
  countGate.close()
  const second = q.claim({ waitMs: 0 })
  await until(() => countGate.held() === 1, 'the second claim is looking at the store')
  // An enqueue hands its job, of higher priority, to the first claim while its statement is out;
  // the statement takes the job behind. Holding two, the claim answers the head and keeps the
  // other on its engine for the next claim.
  const { claiming: first, head } = await claimHandedUrgent(q, held, gate)
  gate.open()
  expect((await first)?.id).toBe(head)
  // The second claim takes that kept job, which is ahead of anything with Matching, rather than
  // poll Matching for the other.
  countGate.open()
  let answered = false
  void second.finally(() => (answered = true))
  await until(() => answered, 'the second claim answers, not waiting on Matching')
  const next = await second
  expect(next?.id).toBe(behind)
  expect(next?.attempts).toBe(1)
  await mb.close()
})
