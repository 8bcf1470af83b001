/**
 * One owner per embedded data directory, end to end: while a store holds a directory, a second
 * open in this process and `matchbox inspect --data-dir` are refused naming the holder's pid,
 * and the holder keeps working; its writes survive close and a reopen that first has to take
 * over a stale lock (a dead pid). A regular file as `dataDir` is `InvalidInput` at once.
 * Two PGlite starts in all (each takes seconds).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { DataDirInUse } from '../src/domain/errors.ts'
import { makeTask } from '../src/domain/Task.ts'
import { dataDirLockName } from '../src/persistence/sql/DataDirLock.ts'
import { openEmbeddedStore } from '../src/persistence/queues/sql/openSqlStore.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { cli } from './harness/runCli.ts'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'matchbox-owner-')))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const key = { namespace: 'owner', family: 'emails', type: 'activity', partition: 0, version: null } as const

it('refuses a second opener of a live directory, keeps the first one working, and recovers a stale lock', async () => {
  const dataDir = join(root, 'data')
  const lockFile = join(dataDir, dataDirLockName)
  const first = await openEmbeddedStore({ dataDir })
  try {
    await expect(openEmbeddedStore({ dataDir })).rejects.toBeInstanceOf(DataDirInUse)
    await expect(makePgliteDriver({ dataDir: `file://${dataDir}` })).rejects.toMatchObject({ _tag: 'DataDirInUse', dataDir, pid: process.pid, retryable: false, maybeCommitted: false })

    const inspected = await cli(['inspect', '--data-dir', dataDir])
    expect(inspected.code).toBe(1)
    expect(inspected.stdout).toBe('')
    expect(inspected.stderr).toMatch(new RegExp(`^matchbox: DataDirInUse: data directory ${dataDir} is in use by process ${process.pid} on `))

    // The refused openers took nothing away from the holder.
    const { rangeId } = await first.acquire({ key, nowMs: 1 })
    await first.append({ key, rangeId, tasks: [makeTask({ jobId: 'kept', createdAtMs: 1 })], nowMs: 2 })
  } finally {
    await first.close()
  }
  expect(existsSync(lockFile)).toBe(false)

  // A holder that died without closing left its lock behind.
  const dead = spawnSync(process.execPath, ['-e', '']).pid
  writeFileSync(lockFile, JSON.stringify({ pid: dead, hostname: hostname() }))
  const reopened = await openEmbeddedStore({ dataDir })
  try {
    expect(JSON.parse(readFileSync(lockFile, 'utf8'))).toEqual({ pid: process.pid, hostname: hostname() })
    expect((await reopened.acquire({ key, nowMs: 3 })).rangeId).toBe(2)
    expect((await reopened.read({ key, subqueue: 0, afterTaskId: 0, limit: 10 })).map((stored) => stored.task.jobId)).toEqual(['kept'])
  } finally {
    await reopened.close()
  }
  expect(existsSync(lockFile)).toBe(false)
})

it('refuses a regular file as dataDir at once, as InvalidInput naming dataDir', async () => {
  const file = join(root, 'not-a-directory')
  writeFileSync(file, 'x')
  await expect(makePgliteDriver({ dataDir: file })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'dataDir' })
  await expect(openEmbeddedStore({ dataDir: file })).rejects.toMatchObject({ _tag: 'InvalidInput', field: 'dataDir' })
  expect(readFileSync(file, 'utf8')).toBe('x')
})
