/**
 * `matchbox sim --jobs` in-process through `run(argv, io)`, on the memory store: a JSON report
 * (every job checker passes, the first seed runs twice to the same trace), the text summary, and
 * a failing run (the job mutation `dropEnqueue`, switched on per test) that exits 1, names the
 * checker that caught it and prints the command that replays the seed; `--trace` writes the first
 * seed's trace and `--timeline` draws its jobs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { JobStore } from '../src/persistence/jobs/JobStore.ts'
import { wrapJobsWith } from '../sim/jobs/JobMutations.ts'
import type { JobsBatchReport } from '../sim/jobs/JobsSimulation.ts'
import { knownEngineFailures, knownFailingSeeds } from '../sim/jobs/KnownEngineFailures.ts'
import { cli } from './harness/runCli.ts'

// The job mutation a failing test switches on; every world's memory job store is made here, so
// it wraps each one, as a seed run's `wrapJobStore` would.
const bug = vi.hoisted(() => ({ wrap: undefined as ((store: JobStore) => JobStore) | undefined }))

vi.mock('../src/persistence/jobs/MemoryJobStore.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/persistence/jobs/MemoryJobStore.ts')>()
  return {
    ...real,
    makeMemoryJobStore: (...options: Parameters<typeof real.makeMemoryJobStore>) => {
      const store = real.makeMemoryJobStore(...options)
      return bug.wrap === undefined ? store : bug.wrap(store)
    },
  }
})

afterEach(() => {
  bug.wrap = undefined
})

describe('matchbox sim --jobs', () => {
  it('runs 3 memory seeds with no known engine failure and reports every job checker as passing, as JSON', async () => {
    // Three seeds in a row that show no known engine failure (sim/jobs/KnownEngineFailures.ts): every checker passes.
    let first = 1
    while ([first, first + 1, first + 2].some((seed) => knownFailingSeeds.has(seed))) first++
    const ran = await cli(['sim', '--jobs', '--store', 'memory', '--seed', String(first), '--seeds', '3', '--json'])
    expect(ran.stderr).toBe('')
    expect(ran.code).toBe(0)
    const report = JSON.parse(ran.stdout) as JobsBatchReport
    expect(report.mode).toBe('jobs')
    expect(report.seeds.map((seed) => seed.seed)).toEqual([first, first + 1, first + 2])
    expect(report.passed).toBe(3)
    expect(report.checkers.every((checker) => checker.verdict === 'pass')).toBe(true)
    expect(report.checkers.map((checker) => checker.name)).toContain('one valid claim')
    expect(report.jobs.enqueued).toBeGreaterThan(0)
    expect(report.jobs.stranded).toBe(0)
    expect(report.determinism?.divergence).toBeNull()
    expect(report.determinism?.hash).toBe(report.seeds[0]?.traceHash)
  })

  it('prints each seed and a summary with the verdicts and where the jobs ended', async () => {
    const ran = await cli(['sim', '--jobs', '--store', 'memory', '--seed', '2', '--seeds', '1'])
    expect(ran.code).toBe(0)
    for (const text of ['end-to-end (jobs) mode', 'seed 2 (1/1)', 'seed=2 hosts=', 'one valid claim', 'attempt budget', 'none stranded', 'same trace twice', 'enqueued']) expect(ran.stdout).toContain(text)
  })

  it('prints a known failure of the current engine with the seed and names its mechanism, passing the seed', async () => {
    const failure = knownEngineFailures.find((known) => known.seeds.length > 0)
    if (failure === undefined) return
    const seed = failure.seeds.at(-1) as number
    const ran = await cli(['sim', '--jobs', '--store', 'memory', '--seed', String(seed), '--seeds', '1'])
    expect(ran.code).toBe(0)
    expect(ran.stdout).toMatch(new RegExp(`known engine failure \\(\\d+, not failing the seed\\): ${failure.checker}: job \\S+`))
    expect(ran.stdout).toMatch(new RegExp(`known +1 seeds show failures of the current engine \\(${seed}\\)`))
    expect(ran.stdout).toContain(`${failure.checker}: ${failure.mechanism.slice(0, 60)}`)
  })

  it('fails with exit 1 when the job store loses enqueues, naming the checker and the replay command', async () => {
    bug.wrap = (store) => wrapJobsWith('dropEnqueue')(store)
    // The planted bug reports every fifth enqueue as written without writing it: the first seed
    // enqueues enough for the final audit to find one gone.
    const ran = await cli(['sim', '--jobs', '--store', 'memory', '--seed', '1', '--seeds', '1'])
    expect(ran.code).toBe(1)
    expect(ran.stdout).toMatch(/job \S+ vanished \(the final audit\): gone from the store, but no ack or cancel of it committed/)
    expect(ran.stdout).toMatch(/npx matchbox sim --jobs --store memory --seed 1/)
    expect(ran.stdout).toMatch(/none stranded +FAIL/)
  })

  it('writes --trace: the first seed\'s options, verdict and hash, then every line of its trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'matchbox-sim-jobs-'))
    try {
      const file = join(dir, 'jobs.txt')
      const ran = await cli(['sim', '--jobs', '--store', 'memory', '--seed', '2', '--seeds', '2', '--trace', file, '--json'])
      expect(ran.code).toBe(0)
      const report = JSON.parse(ran.stdout) as JobsBatchReport & { files: Record<string, string> }
      expect(report.files.trace).toBe(file)
      const text = readFileSync(file, 'utf8')
      const lines = text.split('\n')
      expect(lines[0]).toBe('# matchbox sim --jobs trace — seed 2 on the memory store')
      expect(text).toContain(`# ${report.seeds[0]?.events} client and store calls`)
      expect(text).toContain(`trace hash ${report.seeds[0]?.traceHash}`)
      // The trace itself: store calls as they ran, a work loop's handler, the heal.
      expect(lines.some((line) => /^\d+ @\d+ io host-1 job\./.test(line))).toBe(true)
      expect(lines.some((line) => / handler starts /.test(line))).toBe(true)
      expect(lines.some((line) => /HEAL/.test(line))).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('writes --timeline: hosts, faults and the life of every job, self-contained', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'matchbox-sim-jobs-'))
    try {
      const file = join(dir, 'jobs.html')
      const ran = await cli(['sim', '--jobs', '--store', 'memory', '--seed', '2', '--seeds', '1', '--timeline', file, '--json'])
      expect(ran.code).toBe(0)
      expect((JSON.parse(ran.stdout) as { files: Record<string, string> }).files.timeline).toBe(file)
      const html = readFileSync(file, 'utf8')
      expect(html).toMatch(/^<!doctype html>/)
      expect(html).toContain('matchbox sim --jobs — seed 2 on the memory store: passed')
      expect(html).toMatch(/jobs \(\d+\)|jobs: first \d+ of \d+/)
      for (const text of ['enqueued', 'claimed', 'acked', 'host-1', 'heal → final phase']) expect(html).toContain(text)
      expect(html).not.toMatch(/(src|href)="https?:/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
