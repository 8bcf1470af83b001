/**
 * Fencing across independent connections (DESIGN.md §1, upstream Matching): two stores on two separate
 * `pg` Pools share one fresh database. In each race owner A acquires a queue and fires writes
 * while owner B acquires it; the checker (harness/fencingChecker.ts) proves that no write under
 * A's old range committed after B's acquire and that every write A saw succeed is readable by B.
 *
 * Three variants — append, checkpoint and relocate against acquire — 1000 races in all. The
 * races must actually split (some of A's writes before B's acquire, some refused after it), or
 * the test would pass vacuously; that is asserted too.
 *
 * The last test proves the check can fail: an A whose appends are not fenced (the harness's
 * `withUnfencedAppends`: each append claims the queue's range at that moment, as an append
 * statement without the range check would) must be caught. `SIM_SEED=<seed>` replays the interleaving choices.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Random, seedFromEntropy } from '../src/kernel/Random.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { openPostgresStore, openSqlStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { checkRace } from './harness/fencingChecker.ts'
import { withUnfencedAppends } from './harness/unfencedAppends.ts'
import { type RaceVariant, runRace } from './harness/fencingRace.ts'
import { freshDatabase } from './harness/database.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`fencing races: SIM_SEED=${seed}`)
const random = Random.make(seed)

const races: ReadonlyArray<readonly [RaceVariant, number]> = [
  ['append', 400],
  ['checkpoint', 300],
  ['relocate', 300],
]

describe('fencing across independent connections (PostgreSQL)', () => {
  let connectionString: string
  let a: Store
  let b: Store
  beforeAll(async () => {
    connectionString = await freshDatabase('fencing')
    a = await openPostgresStore({ connectionString })
    b = await openPostgresStore({ connectionString })
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
  })

  for (const [variant, count] of races) {
    it(`${variant} vs acquire: ${count} races, no old-range write after the acquire, every success readable`, async () => {
      const stream = random.fork()
      const violations: string[] = []
      let split = 0
      for (let iteration = 0; iteration < count; iteration++) {
        const record = await runRace({ a, b, variant, iteration, namespace: `fence-${variant}`, random: stream })
        violations.push(...checkRace(record))
        if (record.writes.some((write) => write.ok) && record.writes.some((write) => !write.ok)) split++
      }
      console.log(`${variant}: ${split} of ${count} races split A's writes around B's acquire`)
      expect(violations).toEqual([])
      // At least a quarter of the races interleaved A's writes with B's acquire.
      expect(split).toBeGreaterThan(count / 4)
    })
  }

  it('catches an append statement without the range check (the mutant must be detected)', async () => {
    const mutant = withUnfencedAppends(await openSqlStore(makePgDriver({ connectionString })))
    const stream = random.fork()
    const violations: string[] = []
    for (let iteration = 0; iteration < 100 && violations.length === 0; iteration++) {
      violations.push(...checkRace(await runRace({ a: mutant, b, variant: 'append', iteration, namespace: 'fence-mutant', random: stream })))
    }
    await mutant.close()
    console.log(`mutant detected: ${violations[0]}`)
    expect(violations.length).toBeGreaterThan(0)
  })
})
