/**
 * closedEngineRefusals — the check shared by the per-store close tests: after `close()` every
 * method of the engine, of a queue handle taken before close, and of a job handle claimed
 * before close refuses with `ShuttingDown` that is not retryable (`closed: true`), never with
 * the closed driver's retryable `Unavailable`; a second `close()` resolves.
 */
import { expect } from 'vitest'
import type { JobHandle, Matchbox } from '../src/index.ts'

const refusal = { _tag: 'ShuttingDown', closed: true, retryable: false, maybeCommitted: false }

/** Claims a job on `mb`, closes it, and checks every refusal. */
export async function checkClosedRefusals(mb: Matchbox): Promise<void> {
  const q = mb.queue('closing')
  const id = await q.enqueue({ n: 1 })
  await q.enqueue({ n: 2 })
  const job = (await q.claim({ waitMs: 1_000 })) as JobHandle
  expect(job).not.toBeNull()
  await mb.close()
  await mb.close()

  const calls: Record<string, () => Promise<unknown>> = {
    'queue.enqueue': () => q.enqueue('late'),
    'queue.claim': () => q.claim(),
    'queue.getJob': () => q.getJob(id),
    'queue.cancel': () => q.cancel(id),
    'queue.ackBatch': () => q.ackBatch([job]),
    'queue.sweepExpired': () => q.sweepExpired(),
    'queue.counts': () => q.counts(),
    'queue.list': () => q.list(),
    'queue.retryDead': () => q.retryDead(id),
    'job.ack': () => job.ack(),
    'job.heartbeat': () => job.heartbeat(),
    'job.retry': () => job.retry('late'),
    'job.fail': () => job.fail('late'),
    'mb.schedule': () => mb.schedule('s', '@every 5s', 'closing', {}),
    'mb.runSchedules': () => mb.runSchedules(),
    'mb.unschedule': () => mb.unschedule('s'),
    'mb.listSchedules': () => mb.listSchedules(),
    'mb.idle': () => mb.idle(),
  }
  for (const [name, call] of Object.entries(calls)) {
    const error = await call().then(
      () => new Error(`${name} resolved after close`),
      (reason: unknown) => reason,
    )
    expect(error, name).toMatchObject(refusal)
    expect(String((error as Error).message), name).toMatch(/is closed/)
  }
  const throws: Record<string, () => unknown> = {
    'mb.queue': () => mb.queue('other'),
    'mb.outbox': () => mb.outbox('other'),
    'queue.work': () => q.work(async () => {}),
    'mb.startMaintenance': () => mb.startMaintenance({ schedulesEveryMs: 1_000 }),
  }
  for (const [name, call] of Object.entries(throws)) expect(call, name).toThrow(expect.objectContaining(refusal))
}
