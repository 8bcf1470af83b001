/**
 * DataDirLock, without PGlite: a second taker in this process is refused with the holder's pid,
 * a live holder elsewhere on this host or on another host is refused and its lock left alone,
 * stale locks (a dead pid, this pid left by an earlier process, an unparsable file) are taken
 * over, release removes only this holder's lock, and a path that is not a usable directory is
 * `InvalidInput` naming `dataDir`.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DataDirInUse, InvalidInput } from '../../domain/errors.ts'
import { dataDirLockName, lockDataDir } from './DataDirLock.ts'

let root: string
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'matchbox-lock-')))
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

const lockFile = (directory: string) => join(directory, dataDirLockName)
const holderIn = (directory: string): unknown => JSON.parse(readFileSync(lockFile(directory), 'utf8'))

/** A pid that belonged to a process which has exited (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''])
  if (typeof child.pid !== 'number') throw new Error('no child pid')
  return child.pid
}

describe('DataDirLock', () => {
  it('creates a missing directory, names its holder, refuses a second taker, and is released', () => {
    const directory = join(root, 'data')
    const lock = lockDataDir(directory)
    expect(lock.path).toBe(lockFile(directory))
    expect(holderIn(directory)).toEqual({ pid: process.pid, hostname: hostname() })
    expect(() => lockDataDir(directory)).toThrow(DataDirInUse)
    expect(() => lockDataDir(`${directory}/.`)).toThrow(expect.objectContaining({ _tag: 'DataDirInUse', dataDir: directory, pid: process.pid, hostname: hostname() }))
    expect(holderIn(directory)).toEqual({ pid: process.pid, hostname: hostname() })
    lock.release()
    lock.release()
    expect(existsSync(lockFile(directory))).toBe(false)
    lockDataDir(directory).release()
  })

  it('refuses a live holder of this host and of another host, leaving their lock alone', () => {
    const live = { pid: process.ppid, hostname: hostname() }
    writeFileSync(lockFile(root), JSON.stringify(live))
    expect(() => lockDataDir(root)).toThrow(expect.objectContaining({ _tag: 'DataDirInUse', pid: process.ppid }))
    expect(holderIn(root)).toEqual(live)

    // A dead pid on another host may be alive there: never taken over.
    const remote = { pid: deadPid(), hostname: `${hostname()}-elsewhere` }
    writeFileSync(lockFile(root), JSON.stringify(remote))
    let refusal: unknown
    try {
      lockDataDir(root)
    } catch (error) {
      refusal = error
    }
    expect(refusal).toBeInstanceOf(DataDirInUse)
    expect((refusal as DataDirInUse).message).toContain(`is in use by process ${remote.pid} on ${remote.hostname}`)
    expect(holderIn(root)).toEqual(remote)
  })

  it('takes over a stale lock: a dead pid, this pid from an earlier process, an unparsable file', () => {
    for (const stale of [JSON.stringify({ pid: deadPid(), hostname: hostname() }), JSON.stringify({ pid: process.pid, hostname: hostname() }), '', '{"pid": 0}', 'garbage']) {
      writeFileSync(lockFile(root), stale)
      const lock = lockDataDir(root)
      expect(holderIn(root)).toEqual({ pid: process.pid, hostname: hostname() })
      lock.release()
      expect(existsSync(lockFile(root))).toBe(false)
    }
  })

  it('release leaves a lock someone else took over', () => {
    const lock = lockDataDir(root)
    const other = { pid: process.ppid, hostname: hostname() }
    writeFileSync(lockFile(root), JSON.stringify(other))
    lock.release()
    expect(holderIn(root)).toEqual(other)
  })

  it('refuses a path that is not a usable directory as InvalidInput naming dataDir', () => {
    const file = join(root, 'file')
    writeFileSync(file, 'not a directory')
    for (const path of [file, join(file, 'inside'), join(root, 'missing', 'child')]) {
      expect(() => lockDataDir(path)).toThrow(InvalidInput)
      expect(() => lockDataDir(path)).toThrow(expect.objectContaining({ field: 'dataDir' }))
    }
    expect(readFileSync(file, 'utf8')).toBe('not a directory')
  })
})
