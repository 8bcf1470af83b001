/**
 * Vitest global setup: one PostgreSQL server for the whole run. Uses `DATABASE_URL` when set;
 * otherwise starts a throwaway cluster and stops it at the end. Test files get a fresh
 * database each through `freshDatabase()` (test/harness/database.ts).
 *
 * If no server can be had, the run still starts but every PostgreSQL suite fails with the
 * reason and how to provide a server — never a skip.
 */
import type { TestProject } from 'vitest/node'
import { type RunningCluster, startCluster } from './PostgresCluster.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin connection string of the test server, or '' when none could be had. */
    postgresAdminUrl: string
    /** Why no server could be had ('' when one is running). */
    postgresUnavailable: string
  }
}

let cluster: RunningCluster | undefined

export function setup(project: TestProject): void {
  const fromEnv = process.env.DATABASE_URL
  if (fromEnv !== undefined && fromEnv !== '') {
    project.provide('postgresAdminUrl', fromEnv)
    project.provide('postgresUnavailable', '')
    return
  }
  try {
    cluster = startCluster()
    project.provide('postgresAdminUrl', cluster.url)
    project.provide('postgresUnavailable', '')
  } catch (error) {
    project.provide('postgresAdminUrl', '')
    project.provide('postgresUnavailable', error instanceof Error ? error.message : String(error))
  }
}

export function teardown(): void {
  cluster?.stop()
}
