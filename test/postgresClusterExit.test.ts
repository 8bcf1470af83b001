/**
 * A throwaway cluster does not outlive the process that started it. A bench or script that dies
 * before `stop()` (an uncaught error, `process.exit`) would otherwise leave a PostgreSQL server
 * running in a temp directory, holding memory and CPU for every later run on the machine.
 *
 * Each case starts a cluster in a child process that then dies without stopping it, and checks
 * that its directory is gone and no server runs on it.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { findBinaries, ownerArgv } from './harness/PostgresCluster.ts'

const clusterModule = fileURLToPath(new URL('./harness/PostgresCluster.ts', import.meta.url))

// Runs `ending` in a child after it started a cluster; answers the cluster's directory.
function clusterOfDyingChild(ending: string): string {
  const script = `
    import { startCluster } from ${JSON.stringify(clusterModule)}
    const cluster = startCluster()
    console.log('DIR ' + decodeURIComponent(new URL(cluster.url).searchParams.get('host')))
    ${ending}
  `
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 })
  const dir = /^DIR (.+)$/m.exec(child.stdout)?.[1]
  if (dir === undefined) throw new Error(`the child started no cluster: ${child.stderr}`)
  started.push(dir)
  return dir
}

function serverRunsOn(dir: string): boolean {
  const ps = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
  return ps.stdout.split('\n').some((line) => line.includes(dir))
}

// A cluster a failing case left running is stopped here, so a failure leaks nothing either.
const started: string[] = []
afterEach(() => {
  for (const dir of started.splice(0)) {
    if (!existsSync(dir)) continue
    const [command, ...args] = ownerArgv(findBinaries(), 'pg_ctl', ['-D', `${dir}/data`, '-m', 'immediate', '-w', 'stop']) as [string, ...string[]]
    spawnSync(command, args)
    rmSync(dir, { recursive: true, force: true })
  }
})

describe('a throwaway cluster stops with its process', () => {
  it('when the process dies of an uncaught error', () => {
    const dir = clusterOfDyingChild("setTimeout(() => { throw new Error('a bench fell over') }, 0)")
    expect(serverRunsOn(dir)).toBe(false)
    expect(existsSync(dir)).toBe(false)
  })

  it('when the process exits without stopping it', () => {
    const dir = clusterOfDyingChild('process.exit(3)')
    expect(serverRunsOn(dir)).toBe(false)
    expect(existsSync(dir)).toBe(false)
  })
})
