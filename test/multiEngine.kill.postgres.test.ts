/**
 * Engines SIGKILLed under load on one PostgreSQL database (test/harness/killSoak.ts runs it):
 * three worker engine processes and a producer-only engine process, on the real clock; every
 * cycle a seeded random worker is SIGKILLed at a seeded moment and respawned under its old host
 * id or a new one. bench/killSoak.ts runs the same soak a thousand times over.
 *
 * Checks: every job the producer reported as enqueued was handled at least once; after a final
 * drain no job of the queue is left pending or processing, none died, and no engine process
 * ended other than by our SIGKILL or close.
 *
 * `SIM_SEED=<seed>` replays the kill schedule (which engine, when in the enqueue stream, old or
 * new host id) — not the timing of the processes, which is real.
 */
import { describe, expect, it } from 'vitest'
import { seedFromEntropy } from '../src/kernel/Random.ts'
import { freshDatabase } from './harness/database.ts'
import { runKillSoak } from './harness/killSoak.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`multi-engine kill: SIM_SEED=${seed}`)

const kills = 15
// A hang watchdog for the whole test, far past a slow run's need.
const testTimeoutMs = 400_000

describe('engine processes SIGKILLed under load on PostgreSQL', () => {
  it(`${kills} kills of a random worker: every reported enqueue handled, nothing left pending or processing`, async () => {
    const figures = await runKillSoak({ url: await freshDatabase('multi_engine_kill'), kills, seed, log: (line) => console.log(line) })
    console.log(
      `SIM_SEED=${seed}: ${kills} kills, ${figures.reported} enqueues reported (${figures.enqueueFailures} failed), ${figures.handled} handled by ${figures.byHosts} host ids, ` +
        `${figures.duplicates} duplicates; redelivery wait p50 ${Math.round(figures.redeliveryWaits.p50Ms)} ms, max ${Math.round(figures.redeliveryWaits.maxMs)} ms; ` +
        `final drain ${Math.round(figures.drainMs)} ms; ${figures.workerErrors.length} worker errors${figures.workerErrors.length > 0 ? ` (first: ${figures.workerErrors[0]})` : ''}; total ${(figures.totalMs / 1000).toFixed(1)} s`,
    )
    expect(figures.lost, `SIM_SEED=${seed}: reported enqueues never handled`).toBe(0)
    expect(figures.leftLive, `SIM_SEED=${seed}: jobs left pending or processing`).toBe(0)
    expect(figures.dead, `SIM_SEED=${seed}: dead jobs`).toBe(0)
    expect(figures.unexpectedEnds, `SIM_SEED=${seed}: engine processes that ended by themselves`).toEqual([])
    expect(figures.reported).toBeGreaterThan(kills * 5)
  }, testTimeoutMs)
})
