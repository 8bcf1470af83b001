/**
 * Baseline — the build of an earlier commit, for a bench to measure beside the current one in the
 * same run (an A/B: both sides see the same machine at the same moment, so a change that slows
 * the code shows even on a busy machine whose absolute figures wander).
 *
 * `prepareBaseline(rev)` checks `rev` out into a temporary git worktree (detached, outside the
 * repository), links the repository's node_modules into it (the baseline runs on today's
 * dependencies: a commit that changed package-lock.json is measured with the current ones), and
 * builds its dist/ with its own bin/build.mjs. `dispose()` removes the worktree and the directory.
 *
 * Does not: measure anything, or touch the repository's own working tree.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** A built checkout of an earlier commit. */
export interface Baseline {
  /** The commit, as `git log --oneline` names it. */
  readonly commit: string
  /** Loads the compiled module at `path` (repository-relative `.ts` path) from the baseline's dist/. */
  load<T>(path: string): Promise<T>
  dispose(): void
}

const root = fileURLToPath(new URL('..', import.meta.url))

function git(args: ReadonlyArray<string>): string {
  const ran = spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' })
  if (ran.status !== 0) throw new Error(`bench: git ${args.join(' ')} failed: ${ran.stderr.trim()}`)
  return ran.stdout.trim()
}

/** Checks `rev` out and builds it (see the header); throws when either fails, leaving nothing behind. */
export function prepareBaseline(rev: string): Baseline {
  const commit = git(['log', '-1', '--format=%h %s', rev])
  const dir = mkdtempSync(join(tmpdir(), 'matchbox-baseline-'))
  const checkout = join(dir, 'checkout')
  const dispose = (): void => {
    spawnSync('git', ['-C', root, 'worktree', 'remove', '--force', checkout], { stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
    spawnSync('git', ['-C', root, 'worktree', 'prune'], { stdio: 'ignore' })
  }
  try {
    git(['worktree', 'add', '--detach', checkout, rev])
    symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'), 'dir')
    const built = spawnSync(process.execPath, [join(checkout, 'bin', 'build.mjs')], { cwd: checkout, stdio: ['ignore', 'ignore', 'inherit'] })
    if (built.status !== 0) throw new Error(`bench: building ${commit} failed (${built.status ?? built.signal})`)
  } catch (error) {
    dispose()
    throw error
  }
  return {
    commit,
    load: async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(checkout, 'dist', path.replace(/\.ts$/, '.js'))).href)) as T,
    dispose,
  }
}
