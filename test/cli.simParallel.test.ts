/**
 * `matchbox sim --parallel N`: the seeds of a batch run on N worker threads and give exactly the
 * per-seed results of a serial run (options drawn, verdicts, events, steps, simulated time,
 * trace hashes, the determinism check), in both modes, and the text output lists the seeds in
 * seed order. The workers load the simulator from TypeScript source here (tsx's loader), as
 * they load compiled JavaScript from dist/.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { JobsBatchReport } from '../sim/jobs/JobsSimulation.ts'
import type { SimBatchReport } from '../sim/matching/Simulation.ts'
import { cli } from './harness/runCli.ts'

const dir = mkdtempSync(join(tmpdir(), 'matchbox-sim-parallel-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// Everything a seed reports but its wall time, which no two runs share.
function withoutWallTime<T extends { readonly wallMs: number }>(seeds: ReadonlyArray<T>): Array<Omit<T, 'wallMs'>> {
  return seeds.map(({ wallMs: _wallMs, ...rest }) => rest)
}

describe('matchbox sim --parallel', () => {
  it('runs Matching seeds on 2 workers with the serial run\'s results, seed by seed', async () => {
    const argv = ['sim', '--store', 'memory', '--seed', '11', '--seeds', '4', '--json', '--failure-dir', dir]
    const serial = await cli(argv)
    const parallel = await cli([...argv, '--parallel', '2'])
    expect(serial.code).toBe(0)
    expect(parallel.stderr).toBe('')
    expect(parallel.code).toBe(0)
    const a = JSON.parse(serial.stdout) as SimBatchReport
    const b = JSON.parse(parallel.stdout) as SimBatchReport
    expect(b.seeds.map((seed) => seed.seed)).toEqual([11, 12, 13, 14])
    expect(withoutWallTime(b.seeds)).toEqual(withoutWallTime(a.seeds))
    expect(b.determinism).toEqual(a.determinism)
    expect(b.faults).toEqual(a.faults)
    expect(b.checkers).toEqual(a.checkers)
    expect(b.deliveries).toEqual(a.deliveries)
    expect(b.events).toBe(a.events)
  })

  it('runs --jobs seeds on 2 workers with the serial run\'s results, seed by seed', async () => {
    const argv = ['sim', '--jobs', '--store', 'memory', '--seed', '5', '--seeds', '3', '--json']
    const serial = await cli(argv)
    const parallel = await cli([...argv, '--parallel', '2'])
    expect(serial.code).toBe(0)
    expect(parallel.stderr).toBe('')
    expect(parallel.code).toBe(0)
    const a = JSON.parse(serial.stdout) as JobsBatchReport
    const b = JSON.parse(parallel.stdout) as JobsBatchReport
    expect(b.seeds.map((seed) => seed.seed)).toEqual([5, 6, 7])
    expect(withoutWallTime(b.seeds)).toEqual(withoutWallTime(a.seeds))
    expect(b.determinism).toEqual(a.determinism)
    expect(b.faults).toEqual(a.faults)
    expect(b.checkers).toEqual(a.checkers)
    expect(b.jobs).toEqual(a.jobs)
  })

  it('prints the seeds in seed order with the summary in the main thread', async () => {
    const ran = await cli(['sim', '--store', 'memory', '--seed', '21', '--seeds', '3', '--parallel', '2', '--failure-dir', dir])
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain('on 2 worker threads; results print in seed order')
    const order = [...ran.stdout.matchAll(/^seed (\d+) \((\d)\/3\)$/gm)].map((match) => [Number(match[1]), Number(match[2])])
    expect(order).toEqual([[21, 1], [22, 2], [23, 3]])
    // Each seed's header is followed by its own options and its own verdict, before the next header.
    const blocks = ran.stdout.split(/^(?=seed \d+ \(\d\/3\)$)/m).slice(1)
    expect(blocks.map((block) => [/^ {2}seed=(\d+) /m.exec(block)?.[1], /^ {2}→ /m.test(block)])).toEqual([['21', true], ['22', true], ['23', true]])
    expect(ran.stdout).toContain('Summary — seeds 21…23 on the memory store')
  })
})
