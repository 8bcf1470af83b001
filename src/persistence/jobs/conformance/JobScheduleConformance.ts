/**
 * JobScheduleConformance — the job contract's schedules on a job store: registration that survives
 * re-registration unchanged, a leader lease with a fencing token that grows on takeover, and a
 * firing that writes the jobs and the last-fired state together or not at all.
 *
 * Readings pinned here: re-registering with a payload whose keys are in another order is "the
 * same"; a changed schedule is re-anchored with nothing fired; a holder renewing its live lease
 * keeps the fence; re-taking an expired lease (even one's own) grows it; a firing's jobs are
 * inserted as `enqueueMany` inserts them, keys included, however many there are; a schedule's
 * job keys (priority, fairness and concurrency keys) are kept, and changing one re-anchors it.
 */
import { describe, expect, it } from 'vitest'
import type { JobFixture } from './JobFixture.ts'

/** Registers the schedule tests. */
export function describeJobScheduleConformance(fixture: JobFixture): void {
  const store = () => fixture.store()

  describe('job schedules', () => {
    it('registers a schedule once; the same registration changes nothing; a change re-anchors it', async () => {
      const name = fixture.id('schedule')
      const queue = fixture.queue('scheduled')
      const first = await store().putSchedule({ name, spec: '@every 60s', queue, payload: { a: 1, b: [2] }, nowMs: 1_000 })
      expect(first).toEqual({ name, spec: '@every 60s', queue, payload: { a: 1, b: [2] }, anchorMs: 1_000, lastFiredMs: null, timezone: null, revision: 1 })
      expect(await store().putSchedule({ name, spec: '@every 60s', queue, payload: { b: [2], a: 1 }, nowMs: 5_000 })).toEqual(first)
      const changed = await store().putSchedule({ name, spec: '*/5 * * * *', queue, payload: { a: 1, b: [2] }, nowMs: 7_000 })
      expect(changed).toEqual({ ...first, spec: '*/5 * * * *', anchorMs: 7_000, revision: 2 })
      expect((await store().listSchedules()).filter((schedule) => schedule.name === name)).toEqual([changed])
      const zoned = await store().putSchedule({ name, spec: '*/5 * * * *', queue, payload: { a: 1, b: [2] }, timezone: 'Europe/Paris', nowMs: 8_000 })
      expect(zoned).toEqual({ ...changed, timezone: 'Europe/Paris', anchorMs: 8_000, revision: 3 })
      expect(await store().putSchedule({ name, spec: '*/5 * * * *', queue, payload: { a: 1, b: [2] }, timezone: 'Europe/Paris', nowMs: 9_000 })).toEqual(zoned)
    })

    it('deleteSchedule removes a schedule once; jobs it fired stay', async () => {
      const name = fixture.id('gone')
      const queue = fixture.queue('gone')
      await store().putSchedule({ name, spec: '@every 1m', queue, payload: 1, nowMs: 0 })
      expect(await store().deleteSchedule({ name })).toBe(true)
      expect(await store().deleteSchedule({ name })).toBe(false)
      expect((await store().listSchedules()).some((schedule) => schedule.name === name)).toBe(false)
    })

    it('a lease has one live holder; renewal keeps the fence, takeover after expiry grows it', async () => {
      const name = fixture.id('lease')
      expect(await store().acquireLease({ name, holder: 'a', nowMs: 1_000, ttlMs: 10_000 })).toEqual({ fence: 1 })
      expect(await store().acquireLease({ name, holder: 'b', nowMs: 10_999, ttlMs: 10_000 })).toBeNull()
      expect(await store().acquireLease({ name, holder: 'a', nowMs: 5_000, ttlMs: 10_000 })).toEqual({ fence: 1 })
      expect(await store().acquireLease({ name, holder: 'b', nowMs: 14_999, ttlMs: 10_000 })).toBeNull()
      expect(await store().acquireLease({ name, holder: 'b', nowMs: 15_000, ttlMs: 10_000 })).toEqual({ fence: 2 })
      expect(await store().acquireLease({ name, holder: 'a', nowMs: 16_000, ttlMs: 10_000 })).toBeNull()
      expect(await store().acquireLease({ name, holder: 'b', nowMs: 30_000, ttlMs: 10_000 })).toEqual({ fence: 3 })
    })

    it('firing writes the jobs and the last firing together, only under the current fence and revision', async () => {
      const name = fixture.id('fire')
      const lease = fixture.id('fire-lease')
      const queue = fixture.queue('fired')
      const schedule = await store().putSchedule({ name, spec: '@every 1m', queue, payload: 'tick', nowMs: 0 })
      const { fence } = (await store().acquireLease({ name: lease, holder: 'a', nowMs: 0, ttlMs: 1_000 })) ?? { fence: 0 }
      const jobs = [fixture.job(queue, { runAtMs: 60_000, payload: 'tick' }), fixture.job(queue, { runAtMs: 120_000, payload: 'tick' })]
      const base = { leaseName: lease, name, lastFiredMs: 120_000, nowMs: 130_000 }
      expect(await store().fireSchedule({ ...base, fence, expectedRevision: schedule.revision + 1, jobs })).toBe('conflict')
      expect(await store().fireSchedule({ ...base, fence: fence + 1, expectedRevision: schedule.revision, jobs })).toBe('fenced')
      for (const job of jobs) expect(await store().getJob({ queue, id: job.id })).toBeNull()
      expect(await store().fireSchedule({ ...base, fence, expectedRevision: schedule.revision, jobs })).toBe('fired')
      for (const job of jobs) expect(await store().getJob({ queue, id: job.id })).toMatchObject({ state: 'pending', runAtMs: job.runAtMs, createdAtMs: 130_000 })
      const [after] = (await store().listSchedules()).filter((record) => record.name === name)
      expect(after).toMatchObject({ lastFiredMs: 120_000, revision: schedule.revision + 1, anchorMs: 0 })
      expect(await store().fireSchedule({ ...base, fence, expectedRevision: schedule.revision, jobs: [] })).toBe('conflict')
      await store().acquireLease({ name: lease, holder: 'b', nowMs: 5_000, ttlMs: 1_000 })
      expect(await store().fireSchedule({ ...base, fence, expectedRevision: schedule.revision + 1, jobs: [] })).toBe('fenced')
    })

    it('firing enqueues as enqueueMany does: keys held by a live job or an earlier occurrence write nothing; any number of jobs', async () => {
      const name = fixture.id('fire-keys')
      const lease = fixture.id('fire-keys-lease')
      const queue = fixture.queue('fired-keys')
      const schedule = await store().putSchedule({ name, spec: '@every 1s', queue, payload: 'tick', nowMs: 0 })
      const { fence } = (await store().acquireLease({ name: lease, holder: 'a', nowMs: 0, ttlMs: 60_000 })) ?? { fence: 0 }
      const holder = await store().enqueue({ job: fixture.job(queue, { key: 'held' }), nowMs: 0 })
      const keyed = [fixture.job(queue, { key: 'held' }), fixture.job(queue, { key: 'twice' }), fixture.job(queue, { key: 'twice' })]
      const plain = Array.from({ length: 1_001 }, (_, index) => fixture.job(queue, { runAtMs: 1_000 * index, payload: index }))
      const base = { leaseName: lease, fence, name, nowMs: 2_000_000 }
      expect(await store().fireSchedule({ ...base, expectedRevision: schedule.revision, lastFiredMs: 1_000_000, jobs: [...keyed, ...plain] })).toBe('fired')
      expect(await store().getJob({ queue, id: keyed[0]?.id ?? '' })).toBeNull()
      expect(await store().getJob({ queue, id: holder.id })).toMatchObject({ state: 'pending', key: 'held', createdAtMs: 0 })
      expect(await store().getJob({ queue, id: keyed[1]?.id ?? '' })).toMatchObject({ state: 'pending', key: 'twice' })
      expect(await store().getJob({ queue, id: keyed[2]?.id ?? '' })).toBeNull()
      expect(await store().getJob({ queue, id: plain[1_000]?.id ?? '' })).toMatchObject({ state: 'pending', payload: 1_000, runAtMs: 1_000_000, createdAtMs: 2_000_000 })
      expect(await store().countJobs({ queue })).toEqual({ pending: 1 + 1 + 1_001, processing: 0, dead: 0 })
    })

    it("keeps a schedule's job keys: listed as given, the same keys change nothing, other keys re-anchor, bad ones are refused", async () => {
      const name = fixture.id('schedule-keys')
      const queue = fixture.queue('scheduled-keys')
      const keys = { priority: 4, fairnessKey: 'tenant', fairnessWeight: 2.5, concurrencyKey: 'account', concurrencyLimit: 3 }
      const first = await store().putSchedule({ name, spec: '@every 60s', queue, payload: 1, ...keys, nowMs: 1_000 })
      expect(first).toEqual({ name, spec: '@every 60s', queue, payload: 1, anchorMs: 1_000, lastFiredMs: null, timezone: null, revision: 1, ...keys })
      expect((await store().listSchedules()).filter((schedule) => schedule.name === name)).toEqual([first])
      expect(await store().putSchedule({ name, spec: '@every 60s', queue, payload: 1, ...keys, nowMs: 2_000 })).toEqual(first)
      let revision = first.revision
      for (const changed of [{ priority: 5 }, { fairnessKey: 'other' }, { fairnessWeight: 3 }, { concurrencyLimit: 4 }]) {
        const next = await store().putSchedule({ name, spec: '@every 60s', queue, payload: 1, ...keys, ...changed, nowMs: 3_000 + revision })
        expect(next).toEqual({ ...first, ...changed, anchorMs: 3_000 + revision, revision: ++revision })
      }
      // Without keys: none listed, and that is a change too.
      expect(await store().putSchedule({ name, spec: '@every 60s', queue, payload: 1, nowMs: 9_000 })).toEqual({ ...first, priority: undefined, fairnessKey: undefined, fairnessWeight: undefined, concurrencyKey: undefined, concurrencyLimit: undefined, anchorMs: 9_000, revision: revision + 1 })
      const bad: Array<[object, string]> = [
        [{ priority: 10 }, 'priority'],
        [{ fairnessKey: 'k'.repeat(65) }, 'fairnessKey'],
        [{ fairnessKey: 'k', fairnessWeight: 1001 }, 'fairnessWeight'],
        [{ fairnessWeight: 2 }, 'fairnessWeight'],
        [{ concurrencyKey: 'c' }, 'concurrencyLimit'],
        [{ concurrencyLimit: 2 }, 'concurrencyLimit'],
        [{ concurrencyKey: 'c', concurrencyLimit: 10_001 }, 'concurrencyLimit'],
      ]
      const badName = fixture.id('schedule-bad-keys')
      for (const [given, field] of bad) await expect(store().putSchedule({ name: badName, spec: '@every 60s', queue, payload: 1, ...given, nowMs: 1_000 })).rejects.toMatchObject({ _tag: 'InvalidInput', field })
      expect((await store().listSchedules()).some((schedule) => schedule.name === badName)).toBe(false)
    })
  })
}
