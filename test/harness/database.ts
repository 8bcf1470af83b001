/**
 * freshDatabase — a new, empty PostgreSQL database for one test file, on the server the global
 * setup provided. Fails (never skips) when there is no server.
 */
import pg from 'pg'
import { inject } from 'vitest'

let counter = 0

/** Creates a uniquely named database and returns its connection string. */
export async function freshDatabase(label = 'test'): Promise<string> {
  const adminUrl = inject('postgresAdminUrl')
  if (adminUrl === '') throw new Error(`PostgreSQL is required for this suite and none is available: ${inject('postgresUnavailable')}`)
  const name = `mb_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase().slice(0, 30)}_${process.pid}_${++counter}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`)
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
