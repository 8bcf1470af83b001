/**
 * The schedule property's bounds: a failure's shrinking runs a bounded number of worlds, and the
 * first failing world is printed before shrinking starts (so a run its test's timeout cuts short
 * still names it).
 */
import { afterEach, expect, it, vi } from 'vitest'
import { checkSchedules } from './ScheduleProperty.ts'

afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllEnvs()
})

// A world that breaks whenever its script has a decision: every shrink candidate with one fails,
// so an unbounded shrink would walk the whole list down, one world per step.
const breaksOnAnyDecision = async (schedule: { readonly script: ReadonlyArray<number> }) => ({ ok: schedule.script.length === 0, violations: ['planted'], events: 1 })

it('shrinks a failure with at most shrinkRunsMax more worlds and prints the first failure at once', async () => {
  vi.stubEnv('SIM_SEED', '42')
  vi.stubEnv('SIM_PATH', '')
  const printed: string[] = []
  vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line))
  let worlds = 0
  let firstFailure: number | null = null
  const report = await checkSchedules({
    store: 'memory',
    file: 'sim/core/ScheduleProperty.test.ts',
    numRuns: 50,
    scriptLengthMax: 200,
    shrinkRunsMax: 3,
    runWorld: async (schedule) => {
      const verdict = await breaksOnAnyDecision(schedule)
      if (!verdict.ok && firstFailure === null) firstFailure = worlds
      worlds++
      return verdict
    },
  })
  expect(report.failure).toContain('planted')
  expect(firstFailure).not.toBeNull()
  expect(worlds - (firstFailure as unknown as number) - 1).toBe(3)
  expect(printed.some((line) => line.includes('broke:') && line.includes('at most 3 more worlds'))).toBe(true)
  expect(report.failure).toContain('shrink budget spent')
})
