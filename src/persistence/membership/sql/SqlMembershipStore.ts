/**
 * SqlMembershipStore — the MembershipStore contract (persistence/membership/MembershipStore.ts) over the
 * SQL driver seam, so the embedded (PGlite) and postgres (`pg`) stores run the same statements
 * (membershipSql.ts) on the table of migration 002.
 *
 * Owns: validating input before any SQL, decoding rows with assertions after read, mapping
 * failures into the catalogue exactly as the Store does (`toStoreError`), and the factories
 * that open a membership store next to the Store: `openSqlMembershipStore` (a driver built
 * elsewhere), `openPostgresMembershipStore` and `openEmbeddedMembershipStore`.
 *
 * Invariants: a store is returned only after every migration is applied (the same runner and
 * advisory lock as the Store, so opening both in any order is safe); the store owns its driver
 * (`close` closes it, and so does a failed open), while a caller's Pool or PGlite instance is
 * never closed — so a host can share its Pool between its Store and its membership store.
 *
 * Does not: read a clock, heartbeat on its own (actors/Membership.ts does), or prune rows.
 */
import type { PGlite } from '@electric-sql/pglite'
import type pg from 'pg'
import { assert } from '../../../kernel/assert.ts'
import { checkHeartbeat, checkHostId, checkLiveHosts, compareHostIds, type HostRow, type MembershipStore } from '../MembershipStore.ts'
import type { Driver } from '../../sql/Driver.ts'
import { heartbeatSql, leaveSql, liveHostsSql } from './membershipSql.ts'
import { makePgDriver } from '../../sql/PgDriver.ts'
import { makePgliteDriver } from '../../sql/PgliteDriver.ts'
import type { Schema } from '../../sql/Schema.ts'
import { makeSqlSession, openMigrated } from '../../sql/SqlSession.ts'
import { toSafeInteger } from '../../queues/sql/SqlValues.ts'

interface HostRowColumns {
  readonly host_id: unknown
  readonly last_seen_ms: unknown
  readonly expires_at_ms: unknown
}

function decodeHostRow(row: HostRowColumns): HostRow {
  assert(typeof row.host_id === 'string', `membership_hosts.host_id is not text: ${String(row.host_id)}`)
  const lastSeenMs = toSafeInteger(row.last_seen_ms, 'last_seen_ms')
  const expiresAtMs = toSafeInteger(row.expires_at_ms, 'expires_at_ms')
  assert(expiresAtMs > lastSeenMs, `host ${row.host_id} expires at ${expiresAtMs}, not after it was last seen (${lastSeenMs})`)
  return { hostId: row.host_id, lastSeenMs, expiresAtMs }
}

/** Makes a MembershipStore over an already migrated schema. Closing it closes the driver. */
export function makeSqlMembershipStore(driver: Driver, schema: Schema): MembershipStore {
  const sql = { heartbeat: heartbeatSql(schema), leave: leaveSql(schema), liveHosts: liveHostsSql(schema) }

  const { run, validated, close } = makeSqlSession(driver)

  return {
    kind: driver.kind,

    async heartbeat(params) {
      const { hostId, nowMs, ttlMs } = validated('heartbeat', () => checkHeartbeat(params))
      const [row] = await run<HostRowColumns>('heartbeat', true, sql.heartbeat, [hostId, nowMs, nowMs + ttlMs])
      assert(row !== undefined, `heartbeat of ${hostId} returned no row`)
      return decodeHostRow(row)
    },

    async leave(params) {
      const hostId = validated('leave', () => checkHostId(params.hostId))
      const rows = await run<{ host_id: unknown }>('leave', true, sql.leave, [hostId])
      return rows.length > 0
    },

    async liveHosts(params) {
      const { nowMs } = validated('liveHosts', () => checkLiveHosts(params))
      const rows = (await run<HostRowColumns>('liveHosts', false, sql.liveHosts, [nowMs])).map(decodeHostRow)
      rows.forEach((row, index) => {
        assert(row.expiresAtMs > nowMs, `liveHosts returned ${row.hostId}, expired at ${row.expiresAtMs} ≤ ${nowMs}`)
        assert(index === 0 || compareHostIds((rows[index - 1] as HostRow).hostId, row.hostId) < 0, 'liveHosts returned hosts out of order')
      })
      return rows
    },

    close,
  }
}

/**
 * Migrates `driver`'s database and returns a MembershipStore over it, in `schema` (default
 * `matchbox`, the Store's). The membership store owns the driver.
 */
export async function openSqlMembershipStore(driver: Driver, options: { readonly schema?: string } = {}): Promise<MembershipStore> {
  return openMigrated(driver, options.schema, (schema) => makeSqlMembershipStore(driver, schema))
}

/** Opens the postgres membership store over a connection string (its own Pool) or the caller's Pool (left open by `close`). */
export async function openPostgresMembershipStore(options: {
  readonly connectionString?: string
  readonly pool?: pg.Pool
  readonly schema?: string
}): Promise<MembershipStore> {
  const { connectionString, pool } = options
  if ((connectionString === undefined) === (pool === undefined)) throw new Error('openPostgresMembershipStore needs exactly one of connectionString or pool')
  const driver = makePgDriver(pool !== undefined ? { pool } : { connectionString: connectionString as string })
  return openSqlMembershipStore(driver, options.schema !== undefined ? { schema: options.schema } : {})
}

/** Opens the embedded membership store over the caller's PGlite instance (left open by `close`), e.g. the one its Store uses. */
export async function openEmbeddedMembershipStore(options: { readonly pglite: PGlite; readonly schema?: string }): Promise<MembershipStore> {
  const driver = await makePgliteDriver({ pglite: options.pglite })
  return openSqlMembershipStore(driver, options.schema !== undefined ? { schema: options.schema } : {})
}
