/**
 * Primary failover under load (test/harness/failoverRun.ts runs it): a PostgreSQL primary with a
 * synchronous streaming standby, engines behind repointable TCP proxies. The primary is
 * SIGKILLed and the standby promoted; then the new primary is isolated while it keeps running
 * with one engine still on it, and its own synchronous standby promoted.
 *
 * Checks: on each promoted server, before any engine reached it, every enqueue acknowledged so
 * far is there, no acknowledged ack is undone and every acknowledged death is dead; over the run
 * no acknowledged enqueue is lost and no acked job runs again; the engine left on the isolated
 * old primary tried to write and had nothing acknowledged; every engine resumed without a
 * restart; the final drain leaves nothing pending or processing.
 *
 * Slow (a minute or two of real time): `npm run test:deep` only. `SIM_SEED=<seed>` fixes the
 * engines' seeds, not the timing, which is real.
 */
import { describe, expect, it } from 'vitest'
import { seedFromEntropy } from '../src/kernel/Random.ts'
import { runFailover } from './harness/failoverRun.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`failover: SIM_SEED=${seed}`)

describe('primary failover with synchronous replication', () => {
  it('loses no acknowledged enqueue or handle operation, fences the isolated old primary, and the engines resume', async () => {
    const figures = await runFailover({ seed, log: (line) => console.log(line) })
    console.log(JSON.stringify({ ...figures, failovers: figures.failovers.map((step) => ({ ...step, missingEnqueues: step.missingEnqueues.length, undoneAcks: step.undoneAcks.length })) }))
    for (const step of figures.failovers) {
      expect(step.missingEnqueues, `${step.name}: acknowledged enqueues missing`).toEqual([])
      expect(step.undoneAcks, `${step.name}: acked jobs still there`).toEqual([])
      expect(step.missingDeaths, `${step.name}: acknowledged deaths missing`).toEqual([])
      expect(step.checkedAcks, `${step.name}: the check saw acks`).toBeGreaterThan(0)
    }
    expect(figures.failovers.map((step) => step.resumedHosts)).toEqual([['producer', 'a', 'b', 'x'], ['producer', 'a', 'b']])
    expect(figures.lostEnqueues, 'acknowledged enqueues never handled').toEqual([])
    expect(figures.lostAcks, 'acked jobs that ran again').toEqual([])
    expect(figures.isolated.writesAttempted, 'x tried to write to the isolated old primary').toBeGreaterThan(0)
    expect(figures.isolated.writesAcknowledged, 'writes the isolated old primary acknowledged').toBe(0)
    expect(figures.isolated.resumeMs).toBeGreaterThanOrEqual(0)
    expect(figures.deathsAcknowledged).toBeGreaterThan(0)
    expect(figures.leftLive).toBe(0)
  }, 600_000)
})
