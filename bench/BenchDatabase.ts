/**
 * BenchDatabase — a fresh database for a soak: on DATABASE_URL's server when it is set (the user
 * must be allowed to CREATE DATABASE), else on a throwaway cluster (test/harness/PostgresCluster.ts),
 * fast (fsync off) unless the bench asks for the durable profile.
 * `drop()` removes the database and stops the cluster if one was started.
 *
 * Does not: reuse a database, or keep one after `drop`.
 */
import pg from 'pg'
import { type ClusterOptions, type RunningCluster, startCluster } from '../test/harness/PostgresCluster.ts'

/** A database of the soak's own. */
export interface BenchDatabase {
  /** Its connection string. */
  readonly url: string
  /** The server's admin connection string. */
  readonly adminUrl: string
  drop(): Promise<void>
}

/** Creates `mb_<label>_<pid>`; `durable` starts the throwaway cluster with fsync on (PostgresCluster.ts's durable profile). */
export async function openBenchDatabase(label: string, options: ClusterOptions = {}): Promise<BenchDatabase> {
  let cluster: RunningCluster | undefined
  const fromEnv = process.env.DATABASE_URL
  const adminUrl = fromEnv !== undefined && fromEnv !== '' ? fromEnv : (cluster = startCluster(options)).url
  const database = `mb_${label}_${process.pid}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database} TEMPLATE template0`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return {
    url: url.toString(),
    adminUrl,
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
      await admin.end()
      cluster?.stop()
    },
  }
}
