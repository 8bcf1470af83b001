/**
 * Replays one simulator case in vitest, with no code edits:
 *
 * - `SIM_REPLAY=sim-failure-<seed>.json` replays a failure file (`matchbox sim` writes them) and
 *   asserts it passes — red while the bug is there, green once it is fixed;
 * - `SIM_SEED=<seed>` (and `SIM_STORE=memory|embedded|postgres`, default memory) replays one seed;
 * - with neither, one fixed seed on memory must pass and give the same trace hash twice.
 *
 * A PostgreSQL case runs on DATABASE_URL or the test server the global setup started. It never
 * skips: a missing file, a bad seed or a missing server fails with the reason.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { freshDatabase } from '../../test/harness/database.ts'
import { parseFailureCase, seedRunOf } from './FailureCase.ts'
import { checkDeterminism, runSeed, type SeedRun, type SimStoreKind } from './Simulation.ts'
import { describeOptions } from './Swarm.ts'

/** The seed checked when no case is named: small, fast on memory, and it exercises takeovers. */
const defaultSeed = 1

const storeKinds: ReadonlyArray<SimStoreKind> = ['memory', 'embedded', 'postgres']

async function databaseUrlFor(store: SimStoreKind): Promise<string | undefined> {
  if (store !== 'postgres') return undefined
  const fromEnv = process.env.DATABASE_URL
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : freshDatabase('sim_replay')
}

async function replay(run: SeedRun, label: string): Promise<void> {
  const { options, result } = await runSeed(run)
  // Seeds printed first (house style), then what happened.
  console.log(`${label}\n${describeOptions(options).join('\n')}\n${result.ok ? 'passed' : `FAILED:\n  ${result.violations.join('\n  ')}`} · trace hash ${result.traceHash}`)
  if (!result.ok) console.log(`trace tail:\n${result.trace.slice(-40).join('\n')}`)
  expect(result.violations).toEqual([])
}

describe('simulator replay', () => {
  const file = process.env.SIM_REPLAY
  const seedText = process.env.SIM_SEED
  if (file !== undefined && file !== '') {
    it(`replays ${file} and it passes`, async () => {
      const failure = parseFailureCase(readFileSync(file, 'utf8'), file)
      console.log(`recorded violations:\n  ${failure.violations.join('\n  ')}`)
      await replay(seedRunOf(failure, await databaseUrlFor(failure.store)), `replaying ${file}: seed ${failure.seed} on ${failure.store}`)
    })
  } else if (seedText !== undefined && seedText !== '') {
    const store = (process.env.SIM_STORE ?? 'memory') as SimStoreKind
    it(`replays SIM_SEED=${seedText} on ${store} and it passes`, async () => {
      const seed = Number(seedText)
      expect(Number.isSafeInteger(seed), `SIM_SEED must be an integer, got ${seedText}`).toBe(true)
      expect(storeKinds, `SIM_STORE must be one of ${storeKinds.join(', ')}`).toContain(store)
      const databaseUrl = await databaseUrlFor(store)
      await replay({ seed, store, ...(databaseUrl === undefined ? {} : { databaseUrl }) }, `replaying seed ${seed} on ${store}`)
    })
  } else {
    it(`seed ${defaultSeed} on memory passes and gives the same trace twice`, async () => {
      const run: SeedRun = { seed: defaultSeed, store: 'memory' }
      const first = await runSeed({ ...run, keepTrace: true })
      expect(first.result.violations).toEqual([])
      expect(first.result.events).toBeGreaterThan(100)
      const check = await checkDeterminism(run, first)
      expect(check.divergence).toBeNull()
      expect(check.hash).toBe(first.result.traceHash)
    })
  }
})
