/**
 * Task tests: defaults, idempotent validation that shares nothing with its input, every refusal
 * as an InvalidInput naming its field (under the caller's prefix), expiry and spool routing.
 * Prints its seed.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InvalidInput } from './errors.ts'
import { validateName } from './QueueKey.ts'
import { isExpired, makeTask, spoolVersionOf, type TaskInput, validatePriority } from './Task.ts'

const seed = Number(process.env.SIM_SEED ?? Date.now() % 2 ** 31)
console.log(`Task properties: seed ${seed} (replay with SIM_SEED=${seed})`)

function fieldOf(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInput)
    return (error as InvalidInput).field
  }
  return expect.fail('expected InvalidInput')
}

const minimal: TaskInput = { jobId: 'job-1', createdAtMs: 1_000 }

const taskInput: fc.Arbitrary<TaskInput> = fc.record(
  {
    jobId: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => {
      try {
        return validateName('jobId', s) === s
      } catch {
        return false
      }
    }),
    runId: fc.option(fc.constantFrom('run-1', 'rün/2', '🚀'), { nil: null }),
    kind: fc.constantFrom('job', 'workflow-task', 'activity-task'),
    versionDirective: fc.oneof(
      fc.constant({ kind: 'unversioned' as const }),
      fc.constant({ kind: 'auto-upgrade' as const }),
      fc.constantFrom('v1', 'build@7', 'dépl/🚀').map((version) => ({ kind: 'pinned' as const, version })),
    ),
    priority: fc.integer({ min: 0, max: 9 }),
    createdAtMs: fc.double({ min: 0, max: 4e12, noNaN: true }),
    expiresAtMs: fc.option(fc.double({ min: 0, max: 4e12, noNaN: true }), { nil: null }),
  },
  { requiredKeys: ['jobId', 'createdAtMs'] },
)

describe('makeTask', () => {
  it('fills defaults: no run, kind job, unversioned, priority 0, never expires', () => {
    expect(makeTask(minimal)).toEqual({
      jobId: 'job-1',
      runId: null,
      kind: 'job',
      versionDirective: { kind: 'unversioned' },
      priority: 0,
      createdAtMs: 1_000,
      expiresAtMs: null,
    })
  })

  it('is idempotent, survives JSON, and shares nothing with its input', () => {
    fc.assert(
      fc.property(taskInput, (input) => {
        const task = makeTask(input)
        expect(makeTask(task)).toEqual(task)
        expect(JSON.parse(JSON.stringify(task))).toEqual(task)
        expect(task).not.toBe(input)
        if (input.versionDirective !== undefined) expect(task.versionDirective).not.toBe(input.versionDirective)
      }),
      { seed, numRuns: 300 },
    )
  })

  it('drops fields it does not know', () => {
    expect(makeTask({ ...minimal, deliveryId: 'legacy' } as TaskInput)).not.toHaveProperty('deliveryId')
  })

  it('names every bad field, under the given prefix', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ jobId: '' }, 'task.jobId'],
      [{ jobId: undefined }, 'task.jobId'],
      [{ jobId: 'x'.repeat(1001) }, 'task.jobId'],
      [{ runId: '' }, 'task.runId'],
      [{ runId: 5 }, 'task.runId'],
      [{ kind: '' }, 'task.kind'],
      [{ kind: 'a\nb' }, 'task.kind'],
      [{ versionDirective: { kind: 'sticky' } }, 'task.versionDirective'],
      [{ versionDirective: 'pinned' }, 'task.versionDirective'],
      [{ versionDirective: { kind: 'pinned' } }, 'task.versionDirective.version'],
      [{ versionDirective: { kind: 'pinned', version: '' } }, 'task.versionDirective.version'],
      [{ priority: 10 }, 'task.priority'],
      [{ priority: -1 }, 'task.priority'],
      [{ priority: 1.5 }, 'task.priority'],
      [{ priority: '3' }, 'task.priority'],
      [{ createdAtMs: Number.NaN }, 'task.createdAtMs'],
      [{ createdAtMs: Number.POSITIVE_INFINITY }, 'task.createdAtMs'],
      [{ createdAtMs: -1 }, 'task.createdAtMs'],
      [{ createdAtMs: undefined }, 'task.createdAtMs'],
      [{ expiresAtMs: Number.NaN }, 'task.expiresAtMs'],
      [{ expiresAtMs: '2030' }, 'task.expiresAtMs'],
    ]
    for (const [override, field] of cases) {
      expect([override, fieldOf(() => makeTask({ ...minimal, ...override } as TaskInput))]).toEqual([override, field])
    }
    expect(fieldOf(() => makeTask({ ...minimal, priority: 10 }, 'tasks[3]'))).toBe('tasks[3].priority')
    expect(fieldOf(() => makeTask(null as unknown as TaskInput, 'tasks[0]'))).toBe('tasks[0]')
  })
})

describe('task helpers', () => {
  it('validatePriority accepts 0…9 only', () => {
    expect(validatePriority('p', 0)).toBe(0)
    expect(validatePriority('p', 9)).toBe(9)
    expect(fieldOf(() => validatePriority('subqueue', 10))).toBe('subqueue')
  })

  it('isExpired: never without an expiry; at or after the expiry otherwise', () => {
    expect(isExpired(makeTask(minimal), Number.MAX_SAFE_INTEGER)).toBe(false)
    const expiring = makeTask({ ...minimal, expiresAtMs: 5_000 })
    expect(isExpired(expiring, 4_999)).toBe(false)
    expect(isExpired(expiring, 5_000)).toBe(true)
    expect(isExpired(expiring, 5_001)).toBe(true)
  })

  it('spoolVersionOf: pinned tasks spool to their version, the rest to the default queue', () => {
    expect(spoolVersionOf(makeTask({ ...minimal, versionDirective: { kind: 'pinned', version: 'v3' } }))).toBe('v3')
    expect(spoolVersionOf(makeTask({ ...minimal, versionDirective: { kind: 'auto-upgrade' } }))).toBeNull()
    expect(spoolVersionOf(makeTask(minimal))).toBeNull()
  })
})
