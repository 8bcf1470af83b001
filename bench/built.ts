/**
 * built — the benches load Matchbox as users run it: the compiled package in dist/, as the peers
 * run their own compiled JavaScript. tsx's on-the-fly transform of src/ wraps every closure to
 * keep its name, which costs measurably (about a fifth of `enqueueMany`'s rate).
 *
 * The first process that asks builds dist/ once (`npm run build`); processes it starts inherit
 * the mark and load the same build. `MATCHBOX_BENCH_SOURCE=src` loads src/ through tsx instead.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Where the benches load Matchbox from. */
const benchSource: 'dist' | 'src' = process.env.MATCHBOX_BENCH_SOURCE === 'src' ? 'src' : 'dist'

/** How a bench names the code it measured, for its printed configuration. */
export const benchSourceText = benchSource === 'dist' ? 'the compiled package in dist/ (built at the start of the run)' : 'src/ through tsx (MATCHBOX_BENCH_SOURCE=src)'

/**
 * Loads the module at `path` (relative to the repository root, a `.ts` file under src/ or sim/):
 * its compiled form in dist/, built first if this run has not built it yet, or the source itself.
 */
export async function loadBuilt<T>(path: string): Promise<T> {
  if (benchSource === 'src') return (await import(new URL(`../${path}`, import.meta.url).href)) as T
  if (process.env.MATCHBOX_BENCH_BUILT !== '1') {
    const built = spawnSync(process.execPath, [fileURLToPath(new URL('../bin/build.mjs', import.meta.url))], { stdio: ['ignore', 'ignore', 'inherit'] })
    if (built.status !== 0) throw new Error(`bench: npm run build failed (${built.status ?? built.signal}); MATCHBOX_BENCH_SOURCE=src loads src/ instead`)
    process.env.MATCHBOX_BENCH_BUILT = '1'
  }
  return (await import(new URL(`../dist/${path.replace(/\.ts$/, '.js')}`, import.meta.url).href)) as T
}
