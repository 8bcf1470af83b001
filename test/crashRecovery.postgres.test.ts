/**
 * Crash recovery on real PostgreSQL: 20+ cycles of a child process running a
 * Matching host on the real clock, SIGKILLed the moment it has reported a seeded random number
 * of successful adds, then a new host in this process takes over on the same database. The
 * cycle and its checks live in harness/crashCycle.ts (shared with bench/crashRecovery.ts, which
 * runs more cycles). `SIM_SEED=<seed>` replays the kill points.
 */
import { describe, expect, it } from 'vitest'
import { seedFromEntropy } from '../src/kernel/Random.ts'
import { runCrashCycles } from './harness/crashCycle.ts'
import { freshDatabase } from './harness/database.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`crash recovery: SIM_SEED=${seed}`)

describe('crash recovery on PostgreSQL', () => {
  it('20 SIGKILLs: range rises, ack levels never move back, every reported add is delivered', async () => {
    const url = await freshDatabase('crash')
    const report = await runCrashCycles({ url, cycles: 20, seed, log: (line) => console.log(line) })
    console.log(`reported ${report.reported} adds; started by children ${report.startedByChildren}, by takeover hosts ${report.startedByTakeover}; takeover acquires ${report.acquiresByTakeover}`)
    expect(report.violations).toEqual([])
    expect(report.reported).toBeGreaterThanOrEqual(20)
    // The takeover had real work: some reported adds were still undelivered at the kill.
    expect(report.startedByTakeover).toBeGreaterThan(0)
    expect(report.acquiresByTakeover).toBeGreaterThanOrEqual(20)
  })
})
