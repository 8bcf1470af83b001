/**
 * `matchbox sim` in-process through `run(argv, io)`, on the memory store: a JSON report (seeds
 * passed, determinism hash), the text summary, `--trace` and `--timeline` files, a failing run
 * (a store whose acquire does not raise the range, switched on per test) that writes a failure case
 * and exits 1, `sim replay` of that case (red while the bug is in, green once it is out) and
 * of a case written by hand, and bad usage (exit 2, one line).
 */
import { cli } from './harness/runCli.ts'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import type { SimBatchReport } from '../sim/matching/Simulation.ts'
import type { Store } from '../src/persistence/queues/Store.ts'
import { failureCaseFormat } from '../sim/matching/FailureCase.ts'

// A deliberate bug the checkers must catch: once a queue has an owner, acquire hands the next
// host the same range instead of raising it, so two owners write under one range. The fencing
// checker sees it at the second acquire. sim/matching/Mutations.ts holds the simulator's real menu.
const bug = vi.hoisted(() => ({
  on: false,
  sameRange: (store: Store): Store => {
    const firstAcquire = new Map<string, ReturnType<Store['acquire']>>()
    return new Proxy(store, {
      get(target, property) {
        if (property === 'acquire') {
          return (params: Parameters<Store['acquire']>[0]) => {
            const key = JSON.stringify(params.key)
            const earlier = firstAcquire.get(key)
            if (earlier !== undefined) return earlier
            const acquired = target.acquire(params)
            firstAcquire.set(key, acquired)
            return acquired
          }
        }
        const value = Reflect.get(target, property) as unknown
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  },
}))

// The runs here are on the memory store: every world's shared store is made here, so the bug
// wraps each one, as a seed run's `wrapStore` would.
vi.mock('../src/persistence/queues/MemoryStore.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/persistence/queues/MemoryStore.ts')>()
  return {
    ...real,
    makeMemoryStore: () => {
      const store = real.makeMemoryStore()
      return bug.on ? (bug.sameRange(store) as typeof store) : store
    },
  }
})

const dir = mkdtempSync(join(tmpdir(), 'matchbox-sim-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
afterEach(() => {
  bug.on = false
})

describe('matchbox sim', () => {
  it('runs 3 memory seeds from seed 1 and reports them as JSON with a trace hash', async () => {
    const ran = await cli(['sim', '--store', 'memory', '--seed', '1', '--seeds', '3', '--json', '--failure-dir', dir])
    expect(ran.stderr).toBe('')
    expect(ran.code).toBe(0)
    const report = JSON.parse(ran.stdout) as SimBatchReport
    expect(report.passed).toBe(3)
    expect(report.failed).toBe(0)
    expect(report.seeds.map((seed) => seed.seed)).toEqual([1, 2, 3])
    expect(report.seeds[0]?.options[0]).toMatch(/^seed=1 hosts=\d/)
    expect(report.determinism?.divergence).toBeNull()
    expect(report.determinism?.hash).toMatch(/^[0-9a-f]{64}$/)
    expect(report.determinism?.hash).toBe(report.seeds[0]?.traceHash)
    expect(report.checkers.map((checker) => [checker.name, checker.verdict])).toEqual([
      ['fencing', 'pass'],
      ['at-least-once', 'pass'],
      ['ack safety', 'pass'],
      ['id uniqueness', 'pass'],
      ['user data', 'pass'],
      ['ownership loss', 'pass'],
      ['relocation', 'pass'],
      ['idle poll moves', 'pass'],
      ['other', 'pass'],
    ])
    expect(report.events).toBeGreaterThan(0)
  })

  it('prints each seed with its options, then the summary, and writes --trace and --timeline', async () => {
    const trace = join(dir, 'trace.txt')
    const timeline = join(dir, 'timeline.html')
    const ran = await cli(['sim', '--store', 'memory', '--seed', '4', '--seeds', '2', '--hosts', '3', '--trace', trace, '--timeline', timeline, '--failure-dir', dir])
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain('seed 4 (1/2)\n  seed=4 hosts=3 ')
    expect(ran.stdout).toMatch(/seed 5 \(2\/2\)\n {2}seed=5 hosts=3 .*\n {2}weights .*\n {2}faults /)
    for (const heading of ['Summary — seeds 4…5 on the memory store (hosts=3)', 'seeds        2 run · 2 passed · 0 failed', 'events/s', 'simulated', 'faults', 'fencing', 'lost 0', 'duplicated', 'recovered from ambiguous adds', 'ack safety', 'id uniqueness', 'user data']) {
      expect(ran.stdout).toContain(heading)
    }
    expect(ran.stdout).toMatch(/determinism {2}seed 4 run twice: same trace twice, trace hash [0-9a-f]{64}/)
    const text = readFileSync(trace, 'utf8')
    expect(text).toMatch(/^# matchbox sim trace — seed 4 on the memory store/)
    expect(text).toContain('HEAL: every host up')
    const html = readFileSync(timeline, 'utf8')
    expect(html).toMatch(/^<!doctype html>/)
    expect(html).toContain('<svg')
    expect(html).toContain('range ownership per physical queue')
    expect(html).not.toMatch(/(src|href)="https?:/)
  })

  it('shows a progress bar on a TTY and still prints the summary', async () => {
    const ran = await cli(['sim', '--store', 'memory', '--seed', '3', '--seeds', '2', '--failure-dir', dir], true)
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain('seeds')
    expect(ran.stdout).toContain('Summary')
  })

  it('fails a run whose store does not fence: names the violation, writes the case, prints the replay commands, exits 1', async () => {
    bug.on = true
    const ran = await cli(['sim', '--store', 'memory', '--seed', '1', '--failure-dir', dir])
    expect(ran.code).toBe(1)
    expect(ran.stderr).toMatch(/^matchbox: SimulationFailed: 1 of 1 seeds failed/)
    expect(ran.stdout).toMatch(/✗ default\/family-0\/\w+\/\d(@\w+)?: acquire returned range 1, not above 1/)
    const file = join(dir, 'sim-failure-1.json')
    expect(ran.stdout).toContain(`npx matchbox sim replay ${file}`)
    expect(ran.stdout).toContain(`SIM_REPLAY=${file} npx vitest run sim/matching/replay.test.ts`)
    expect(ran.stdout).toMatch(/fencing {9}FAIL \(\d+ violations?, first on seed 1\)/)
    const failure = JSON.parse(readFileSync(file, 'utf8')) as { seed: number; store: string; violations: string[]; traceTail: string[] }
    expect(failure).toMatchObject({ format: failureCaseFormat, seed: 1, store: 'memory', overrides: {} })
    expect(failure.violations.length).toBeGreaterThan(0)
    expect(failure.traceTail.length).toBeGreaterThan(0)

    const stillBroken = await cli(['sim', 'replay', file, '--failure-dir', dir])
    expect(stillBroken.code).toBe(1)
    expect(stillBroken.stdout).toContain('trace: identical to the recorded run')
    expect(stillBroken.stdout).toContain('the case still fails')

    bug.on = false
    const fixed = await cli(['sim', 'replay', file, '--failure-dir', dir])
    expect(fixed.code).toBe(0)
    expect(fixed.stdout).toContain('the case passes now')
  })

  it('replays a case written by hand', async () => {
    const file = join(dir, 'by-hand.json')
    writeFileSync(file, JSON.stringify({ format: failureCaseFormat, seed: 3, store: 'memory', overrides: { steps: 300 }, violations: ['made up'] }))
    const ran = await cli(['sim', 'replay', file, '--json'])
    expect(ran.code).toBe(0)
    const replayed = JSON.parse(ran.stdout) as { outcome: { ok: boolean; steps: number }; sameTrace: boolean | null }
    expect(replayed.outcome.ok).toBe(true)
    expect(replayed.outcome.steps).toBe(300)
    expect(replayed.sameTrace).toBeNull()
  })

  it.each([
    [['sim', '--seeds', '0'], /--seeds <n>.*must be an integer in 1…/],
    [['sim', '--seeds', 'many'], /--seeds <n>.*must be an integer/],
    [['sim', '--seed', '-1'], /UsageError/],
    [['sim', '--store', 'sqlite'], /--store.*sqlite.*memory, embedded, postgres/],
    [['sim', '--hosts', '99'], /--hosts <n>.*1…16/],
    [['sim', '--bogus'], /unknown option '--bogus'/],
    [['sim', '--store', 'memory', '--database-url', 'postgres://x'], /--database-url is only for --store postgres/],
    [['sim', 'replay', '/nonexistent/sim-failure-1.json'], /cannot read \/nonexistent\/sim-failure-1.json: ENOENT/],
    [['sim', 'replay', 'x.json', '--seed', '4'], /replay takes the seed, store and overrides from x.json; drop --seed/],
    [['sim', '--timeline', '', '--store', 'memory', '--seeds', '1', '--steps', '20'], /--timeline <file.html>.*needs a path/],
    [['sim', '--trace', ' ', '--store', 'memory', '--seeds', '1', '--steps', '20'], /--trace <file>.*needs a path/],
    [['sim', '--failure-dir', '', '--store', 'memory', '--seeds', '1', '--steps', '20'], /--failure-dir <dir>.*needs a path/],
    [['sim', '--timeline', '/nonexistent-dir/run.html', '--store', 'memory', '--seeds', '1', '--steps', '20', '--json'], /UsageError: --timeline: cannot write \/nonexistent-dir\/run.html: ENOENT/],
    [['sim', '--trace', '/nonexistent-dir/run.txt', '--store', 'memory', '--seeds', '1', '--steps', '20', '--json'], /UsageError: --trace: cannot write \/nonexistent-dir\/run.txt: ENOENT/],
    [['sim', '--jobs', '--timeline', '/nonexistent-dir/jobs.html', '--store', 'memory', '--seeds', '1', '--json'], /UsageError: --timeline: cannot write \/nonexistent-dir\/jobs.html: ENOENT/],
  ])('%j is bad usage: exit 2, one line', async (argv, message) => {
    const ran = await cli(argv)
    expect(ran.code).toBe(2)
    expect(ran.stderr).toMatch(message)
    expect(ran.stderr.trim().split('\n')).toHaveLength(1)
  })

  it('refuses postgres without a database, naming --database-url and DATABASE_URL', async () => {
    const saved = process.env.DATABASE_URL
    delete process.env.DATABASE_URL
    try {
      const ran = await cli(['sim', '--store', 'postgres', '--seeds', '1'])
      expect(ran.code).toBe(2)
      expect(ran.stderr).toBe('matchbox: UsageError: the postgres store needs a database: pass --database-url <postgres://…> or set DATABASE_URL\n')
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved
    }
  })

  it('refuses a JSON file that is not a failure case', async () => {
    const file = join(dir, 'not-a-case.json')
    writeFileSync(file, '{"seed": 1}')
    const ran = await cli(['sim', 'replay', file])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain('is not a simulator failure case: format is undefined')
  })
})
