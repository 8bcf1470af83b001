/**
 * DataDirLock — one owner per embedded data directory. PGlite runs a whole PostgreSQL inside
 * the process that opened the directory, with its buffers and write-ahead log position in that
 * process's memory and without PostgreSQL's postmaster interlock; a second PGlite on the same
 * directory (another process, or another store in this one) would write pages the first does
 * not know about and corrupt the database. The embedded driver takes this lock before it
 * opens a directory and releases it after closing.
 *
 * The lock is the file `<dataDir>/.matchbox.lock`, holding `{ pid, hostname }` of its holder.
 * It is published in one step: written and synced beside its place, then hard-linked into it,
 * which fails when a lock is already there — so a lock file never exists without its content
 * (on a file system without hard links it is created with O_EXCL and written at once).
 *
 * A lock is stale, and is taken over, when its holder is gone: a process of this host that no
 * longer exists (`kill(pid, 0)` fails with ESRCH); this process's own pid when this process
 * holds no such lock (a container restarted under the same pid); or a file that does not parse
 * (a crash before its content reached the disk). A lock of another host is never taken over:
 * its holder cannot be checked from here.
 *
 * Does not: stop two openers from taking over the same stale lock at the same instant (the
 * check and the removal are two steps, as with PostgreSQL's own postmaster.pid), nor protect
 * against programs that ignore the lock.
 */
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, realpathSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, resolve } from 'node:path'
import { DataDirInUse, InvalidInput } from '../../domain/errors.ts'
import { dataDirLockAttemptsMax } from '../../kernel/Limits.ts'

/** The lock file's name inside a data directory. */
export const dataDirLockName = '.matchbox.lock'

/** A held lock on a data directory. */
export interface DataDirLock {
  /** The lock file. */
  readonly path: string
  /** Removes the lock file if it is still this holder's; later calls do nothing. */
  release(): void
}

interface Holder {
  readonly pid: number
  readonly hostname: string
}

// Directories (real paths) this process holds: the lock file alone cannot tell this process's
// live lock from one left by an earlier process that had the same pid.
const heldHere = new Set<string>()

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

// The directory as an absolute real path, created (not its parents, as PGlite would) when missing.
function directoryOf(dataDir: string): string {
  const directory = resolve(dataDir)
  let isDirectory: boolean
  try {
    isDirectory = statSync(directory).isDirectory()
  } catch (error) {
    if (codeOf(error) === 'ENOTDIR') throw new InvalidInput({ field: 'dataDir', reason: `${directory} is inside a file, not a directory` })
    if (codeOf(error) !== 'ENOENT') throw toInvalid(directory, error)
    try {
      mkdirSync(directory)
    } catch (mkdirError) {
      if (codeOf(mkdirError) === 'ENOENT') throw new InvalidInput({ field: 'dataDir', reason: `the parent directory of ${directory} does not exist` })
      if (codeOf(mkdirError) !== 'EEXIST') throw toInvalid(directory, mkdirError)
    }
    isDirectory = true
  }
  if (!isDirectory) throw new InvalidInput({ field: 'dataDir', reason: `${directory} is a file, not a directory` })
  return realpathSync(directory)
}

// A file-system failure on the directory (no permission, read-only) as the caller's problem to fix.
function toInvalid(directory: string, error: unknown): InvalidInput {
  return new InvalidInput({ field: 'dataDir', reason: `${directory} cannot be used: ${error instanceof Error ? error.message : String(error)}` })
}

function readHolder(path: string): Holder | null | 'gone' {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return 'gone'
    throw error
  }
  try {
    const parsed = JSON.parse(text) as { pid?: unknown; hostname?: unknown }
    // pid 0 and negative pids name process groups to kill(): never a holder.
    if (typeof parsed.pid === 'number' && Number.isSafeInteger(parsed.pid) && parsed.pid > 0 && typeof parsed.hostname === 'string') {
      return { pid: parsed.pid, hostname: parsed.hostname }
    }
  } catch {
    // Not JSON: a remnant, handled as no holder below.
  }
  return null
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists, under another user.
    return codeOf(error) !== 'ESRCH'
  }
}

// Puts `content` at `path` unless a file is there; true when this call created it.
function publish(path: string, content: string): boolean {
  const aside = `${path}.${process.pid}`
  const fd = openSync(aside, 'w')
  try {
    writeSync(fd, content)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(aside, path)
    return true
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return false
    if (!['EPERM', 'ENOTSUP', 'ENOSYS', 'EOPNOTSUPP'].includes(codeOf(error) ?? '')) throw error
    return createExclusive(path, content)
  } finally {
    unlinkSync(aside)
  }
}

function createExclusive(path: string, content: string): boolean {
  let fd: number
  try {
    fd = openSync(path, 'wx')
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return false
    throw error
  }
  try {
    writeSync(fd, content)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  return true
}

/**
 * Takes the lock on `dataDir`, creating the directory when it is missing. Throws `DataDirInUse`
 * when a live holder has it, and `InvalidInput` (field `dataDir`) when it is not a usable
 * directory (a regular file, a missing parent, no permission).
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const directory = directoryOf(dataDir)
  const path = join(directory, dataDirLockName)
  const me: Holder = { pid: process.pid, hostname: hostname() }
  const isStale = (holder: Holder | null): boolean =>
    holder === null || (holder.hostname === me.hostname && (holder.pid === me.pid ? !heldHere.has(directory) : !isAlive(holder.pid)))
  try {
    for (let attempt = 1; attempt <= dataDirLockAttemptsMax; attempt++) {
      if (publish(path, `${JSON.stringify(me)}\n`)) return held(directory, path, me)
      const holder = readHolder(path)
      // Gone: its holder released it between our two steps; try again.
      if (holder === 'gone') continue
      if (holder !== null && !isStale(holder)) throw new DataDirInUse({ dataDir: directory, pid: holder.pid, hostname: holder.hostname })
      try {
        unlinkSync(path)
      } catch (error) {
        if (codeOf(error) !== 'ENOENT') throw error
      }
    }
  } catch (error) {
    throw error instanceof DataDirInUse || error instanceof InvalidInput ? error : toInvalid(directory, error)
  }
  throw new InvalidInput({ field: 'dataDir', reason: `${path} changed hands ${dataDirLockAttemptsMax} times while being taken; remove it if no Matchbox uses ${directory}` })
}

function held(directory: string, path: string, me: Holder): DataDirLock {
  heldHere.add(directory)
  let released = false
  return {
    path,
    release() {
      if (released) return
      released = true
      heldHere.delete(directory)
      // Someone may have judged this lock stale and taken it over: theirs is not ours to remove.
      const holder = readHolder(path)
      if (holder !== 'gone' && holder !== null && holder.pid === me.pid && holder.hostname === me.hostname) unlinkSync(path)
    },
  }
}
