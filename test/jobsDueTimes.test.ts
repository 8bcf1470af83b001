/**
 * Due times are kept to the millisecond while due jobs wait in the store: the due-time driver
 * arms its timer for the next due time after now, so a backlog nobody is claiming (rows already
 * due) never hides a claim deadline or a delayed job's runAt behind the once-a-second scan.
 *
 * Memory stores and a ManualClock; time moves only by `clock.advance`, waits are on conditions.
 */
import { describe, expect, it } from 'vitest'
import { ManualClock, open } from '../src/index.ts'
import { settle, until } from './harness/settle.ts'

const start = 1_700_000_000_000

describe('due times with a backlog in the store', () => {
  it('a claim at its attempt budget dies at its deadline, not at the next scan', async () => {
    const clock = new ManualClock(start)
    const mb = await open({ store: 'memory', clock, seed: 4, hostId: 'lapse' })
    const q = mb.queue('lapsing', { visibilityTimeoutS: 45, maxAttempts: 1 })
    await q.enqueueMany(['first', 'waiting'].map((payload) => ({ payload })))
    const job = await q.claim({ waitMs: 0 })
    expect(job?.payload).toBe('first')
    const deadline = job?.deadline as number
    clock.advance(deadline - 1 - clock.now())
    await mb.idle()
    await settle()
    expect((await q.getJob(job?.id as string))?.state).toBe('processing')
    clock.advance(1)
    await mb.idle()
    await settle()
    expect(await q.getJob(job?.id as string)).toMatchObject({ state: 'dead', diedAt: deadline, lastError: 'max attempts exceeded' })
    await mb.close()
  })

  it('a delayed job reaches a waiting worker at its runAt while another queue holds due jobs', async () => {
    const clock = new ManualClock(start)
    const mb = await open({ store: 'memory', clock, seed: 5, hostId: 'delayed' })
    await mb.queue('backlog').enqueueMany(['a', 'b', 'c'].map((payload) => ({ payload })))
    const delayed = mb.queue('delayed')
    const ranAt: number[] = []
    const stop = delayed.work(async () => {
      ranAt.push(clock.now())
    })
    await settle(20)
    // Half a second off the scan's beat, so only a timer armed for it runs the job on time.
    const runAt = start + 10_500
    await delayed.enqueue('later', { runAt: new Date(runAt) })
    clock.advance(runAt - 1 - clock.now())
    await settle(20)
    expect(ranAt).toEqual([])
    clock.advance(1)
    await until(() => ranAt.length === 1, 'the delayed job ran')
    expect(ranAt).toEqual([runAt])
    await stop()
    await mb.close()
  })
})
