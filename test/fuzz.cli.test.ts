/**
 * The CLI under random argv (fast-check, bounded by run count; seed printed first): for every
 * command — lifecycle, inspect, sim, sim replay, help, and words that are no command — random
 * known and unknown flags with random values. Every run ends with exit 0, or with one typed
 * line `matchbox: <Tag>: <message>` on stderr naming a catalogue error or `UsageError` (exit 2
 * for usage and InvalidInput, 1 for a store or simulation failure) — never a stack trace, never
 * a bare JavaScript error (TypeError, RangeError, …).
 *
 * Bounded cost: argv that would run a simulator or open a store gets fixed flags appended (the
 * last occurrence wins): `sim` runs one short memory seed; `inspect` points at a closed port.
 * The test runs in a temporary directory, since random values may name files to write.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cli } from './harness/runCli.ts'
import { runsFor } from './harness/depth.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`CLI fuzz: seed ${seed} (replay with SIM_SEED=${seed})`)

const flags: Record<string, ReadonlyArray<string>> = {
  lifecycle: ['--json'],
  inspect: ['--database-url', '--data-dir', '--schema', '--namespace', '--family', '--tasks-max', '--json'],
  sim: ['--seeds', '--seed', '--store', '--database-url', '--hosts', '--steps', '--trace', '--timeline', '--failure-dir', '--json', '--jobs'],
  'sim replay': ['--json', '--trace', '--timeline'],
  help: [],
}
const common = ['--help', '-h', '--version', '-V', '--', '-', '--no-such-flag', '-x', '--json=1', '--seeds=', '--store=memory']
const closedPort = 'postgres://matchbox@127.0.0.1:1/nothing'

const value = fc.oneof(
  fc.constantFrom('0', '1', '-1', '3', '2.5', '1e3', 'NaN', 'Infinity', '9007199254740993', '99999999999', '', ' ', '0x10', 'memory', 'embedded', 'postgres', 'ramdisk'),
  fc.constantFrom('matchbox', 'default', 'a.b', '💥', 'x'.repeat(2_000), '\u0000', 'sim-failure-1.json', '/nonexistent/dir/file', closedPort),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.integer({ min: -5, max: 100_000 }).map(String),
)

const argvOf = fc
  .oneof(fc.constantFrom(...Object.keys(flags)), fc.string({ maxLength: 8 }))
  .chain((command) => {
    const known = flags[command] ?? []
    const token = fc.oneof(
      known.length === 0 ? fc.constantFrom(...common) : fc.constantFrom(...known),
      fc.constantFrom(...common),
      fc.string({ maxLength: 8 }).map((text) => `--${text}`),
      value,
    )
    const pair = fc.tuple(token, fc.option(value, { nil: undefined })).map(([flag, given]) => (given === undefined ? [flag] : [flag, given]))
    return fc.tuple(fc.constant(command), fc.array(pair, { maxLength: 5 }))
  })
  .map(([command, pairs]) => {
    const head = command === 'sim replay' ? ['sim', 'replay'] : command === '' ? [] : [command]
    const argv = [...head, ...pairs.flat()]
    if (command === 'sim') argv.push('--store', 'memory', '--seeds', '1', '--steps', '20', '--hosts', '2', '--failure-dir', '.')
    if (command === 'inspect') argv.push('--database-url', closedPort)
    return argv
  })

const allowedTags = new Set(['UsageError', 'InvalidInput', 'Unavailable', 'SimulationFailed', 'DataDirInUse', 'SnapshotInvalid', 'InvalidSpec'])

describe('the CLI under random argv', () => {
  const cwd = process.cwd()
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'matchbox-cli-fuzz-'))
    process.chdir(dir)
  })
  afterAll(() => {
    process.chdir(cwd)
    rmSync(dir, { recursive: true, force: true })
  })

  it('exits 0, or prints one typed line and exits 1 or 2; never a stack', async () => {
    await fc.assert(
      fc.asyncProperty(argvOf, async (argv) => {
        const ran = await cli(argv)
        const where = JSON.stringify(argv)
        expect(`${ran.stdout}${ran.stderr}`, where).not.toMatch(/\n\s+at .+:\d+:\d+/)
        expect([0, 1, 2], where).toContain(ran.code)
        if (ran.code === 0) return
        const lines = ran.stderr.split('\n').filter((line) => line.startsWith('matchbox: '))
        expect(lines, where).toHaveLength(1)
        const tag = /^matchbox: ([A-Za-z]+): ./.exec(lines[0] as string)?.[1] ?? ''
        expect(allowedTags.has(tag), `${where}: ${lines[0]}`).toBe(true)
        if (tag === 'UsageError' || tag === 'InvalidInput') expect(ran.code, where).toBe(2)
      }),
      { seed, numRuns: runsFor(150, 2_000) },
    )
  })
})
