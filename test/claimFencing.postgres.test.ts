/**
 * Claims fenced across independent connections: two engines' stores on two separate `pg` Pools
 * share one fresh database. In each race owner A acquires a job queue's physical queue and fires
 * fenced claims (`claimDue`, or `ackAndClaimDue` with an ack riding on each) while owner B
 * acquires it; the checker (harness/claimFencingChecker.ts) proves that no claim or ack under A's
 * old range committed after B's acquire, that each of A's statements wrote all it answered or
 * nothing, and that every refusal was OwnershipLost.
 *
 * The races must actually split (some of A's statements before B's acquire, some refused after
 * it), or the test would pass vacuously; that is asserted too. The last test proves the check can
 * fail: an A whose claims carry no fence must be caught. `SIM_SEED=<seed>` replays the
 * interleaving choices.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Random, seedFromEntropy } from '../src/kernel/Random.ts'
import { openSqlJobStore } from '../src/persistence/jobs/sql/SqlJobStore.ts'
import { openPostgresStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import { makePgDriver } from '../src/persistence/sql/PgDriver.ts'
import { checkClaimRace } from './harness/claimFencingChecker.ts'
import { type ClaimRaceVariant, type RaceOwner, runClaimRace } from './harness/claimFencingRace.ts'
import { freshDatabase } from './harness/database.ts'

const seed = process.env.SIM_SEED !== undefined && process.env.SIM_SEED !== '' ? Number(process.env.SIM_SEED) : (seedFromEntropy() >>> 0) % 2 ** 31
console.log(`claim fencing races: SIM_SEED=${seed}`)
const random = Random.make(seed)

const races: ReadonlyArray<readonly [ClaimRaceVariant, number]> = [
  ['claimDue', 200],
  ['ackAndClaimDue', 200],
]

describe('claims fenced across independent connections (PostgreSQL)', () => {
  let a: RaceOwner
  let b: RaceOwner
  const open = async (connectionString: string): Promise<RaceOwner> => ({
    store: await openPostgresStore({ connectionString }),
    jobStore: await openSqlJobStore(makePgDriver({ connectionString })),
  })
  beforeAll(async () => {
    const connectionString = await freshDatabase('claim_fencing')
    a = await open(connectionString)
    b = await open(connectionString)
  })
  afterAll(async () => {
    for (const owner of [a, b]) {
      await owner?.store.close()
      await owner?.jobStore.close()
    }
  })

  for (const [variant, count] of races) {
    it(`${variant} vs acquire: ${count} races, no old-range claim after the acquire, each statement all or nothing`, async () => {
      const stream = random.fork()
      const violations: string[] = []
      let split = 0
      for (let iteration = 0; iteration < count; iteration++) {
        const record = await runClaimRace({ a, b, variant, iteration, label: 'fence', random: stream })
        violations.push(...checkClaimRace(record))
        if (record.statements.some((statement) => statement.ok) && record.statements.some((statement) => !statement.ok)) split++
      }
      console.log(`${variant}: ${split} of ${count} races split A's claims around B's acquire`)
      expect(violations).toEqual([])
      expect(split).toBeGreaterThan(count / 4)
    })
  }

  it('catches claims without the fence (the mutant must be detected)', async () => {
    const stream = random.fork()
    const violations: string[] = []
    let iteration = 0
    for (; iteration < 100 && violations.length === 0; iteration++) {
      violations.push(...checkClaimRace(await runClaimRace({ a, b, variant: iteration % 2 === 0 ? 'claimDue' : 'ackAndClaimDue', iteration, label: 'mutant', random: stream, unfenced: true })))
    }
    console.log(`unfenced claims detected after ${iteration} races: ${violations[0]}`)
    expect(violations.length).toBeGreaterThan(0)
  })
})
