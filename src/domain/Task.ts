/**
 * Task — one delivery request for one job (DESIGN.md §2). A task names a job; Matching knows
 * nothing about what the job means.
 *
 * Owns: the task shape, its validation, and the version directive that routes it to a
 * physical queue (upstream Matching: unversioned and auto-upgrade tasks spool to the default queue,
 * pinned ones to their version's queue).
 *
 * Invariants: priority is an integer in 0…9 (higher first) and is also the task's subqueue in
 * its physical queue; times are finite epoch milliseconds; the whole task serializes to JSON
 * within `payloadBytesMax`.
 */
import { assert } from '../kernel/assert.ts'
import { nameBytesMax, payloadBytesMax, priorityDefault, priorityMax } from '../kernel/Limits.ts'
import { InvalidInput } from './errors.ts'
import { validateName } from './QueueKey.ts'

/** Where a task may run: any worker, a pinned deployment version, or the current version. */
export type VersionDirective =
  | { readonly kind: 'unversioned' }
  | { readonly kind: 'pinned'; readonly version: string }
  | { readonly kind: 'auto-upgrade' }

/** A delivery request, as added to Matching. */
export interface Task {
  /** The job (or workflow run) this task delivers. */
  readonly jobId: string
  /** Optional run / attempt reference, opaque to Matching. */
  readonly runId: string | null
  /** What kind of delivery this is (e.g. `job`, `workflow-task`), opaque to Matching. */
  readonly kind: string
  readonly versionDirective: VersionDirective
  /** 0…9, higher dispatches first. */
  readonly priority: number
  /** When the task was created, epoch ms. */
  readonly createdAtMs: number
  /** When the task stops being worth delivering, epoch ms; null = never. Expired tasks are dropped at read time. */
  readonly expiresAtMs: number | null
}

/** A task as stored in a physical queue's backlog. */
export interface StoredTask {
  /** Consecutive per physical queue, allocated by the store at append. */
  readonly taskId: number
  readonly task: Task
}

/** The input to `makeTask`: only `jobId` is required. */
export interface TaskInput {
  readonly jobId: string
  readonly runId?: string | null
  readonly kind?: string
  readonly versionDirective?: VersionDirective
  readonly priority?: number
  readonly createdAtMs: number
  readonly expiresAtMs?: number | null
}

function finiteTime(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidInput({ field, reason: 'must be a finite epoch-ms number ≥ 0' })
  }
  return value
}

/** Validates a priority: an integer in 0…9. */
export function validatePriority(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > priorityMax) {
    throw new InvalidInput({ field, reason: `must be an integer in 0…${priorityMax}` })
  }
  return value
}

function validateDirective(field: string, value: unknown): VersionDirective {
  const directive = value as VersionDirective | undefined
  switch (directive?.kind) {
    case 'unversioned':
      return { kind: 'unversioned' }
    case 'auto-upgrade':
      return { kind: 'auto-upgrade' }
    case 'pinned':
      return { kind: 'pinned', version: validateName(`${field}.version`, directive.version) }
    default:
      throw new InvalidInput({ field, reason: 'must be unversioned, pinned (with a version) or auto-upgrade' })
  }
}

/** Validates a task, filling defaults; throws `InvalidInput` naming the bad field. */
export function makeTask(input: TaskInput, field = 'task'): Task {
  if (typeof input !== 'object' || input === null) throw new InvalidInput({ field, reason: 'must be an object' })
  const task: Task = {
    jobId: validateName(`${field}.jobId`, input.jobId),
    runId: input.runId === undefined || input.runId === null ? null : validateName(`${field}.runId`, input.runId),
    kind: input.kind === undefined ? 'job' : validateName(`${field}.kind`, input.kind),
    versionDirective: validateDirective(`${field}.versionDirective`, input.versionDirective ?? { kind: 'unversioned' }),
    priority: validatePriority(`${field}.priority`, input.priority ?? priorityDefault),
    createdAtMs: finiteTime(`${field}.createdAtMs`, input.createdAtMs),
    expiresAtMs:
      input.expiresAtMs === undefined || input.expiresAtMs === null ? null : finiteTime(`${field}.expiresAtMs`, input.expiresAtMs),
  }
  return task
}

// A task's strings are names (jobId, runId, kind, a pinned version), each at most nameBytesMax
// UTF-8 bytes, and JSON spells one byte in at most six (`\u0000`); the rest is a few numbers and
// keys. So every valid task serializes within payloadBytesMax, and makeTask need not serialize it.
assert(4 * 6 * nameBytesMax + 1_024 <= payloadBytesMax, 'a valid task must always serialize within payloadBytesMax')

/** True when the task has expired at `nowMs` and should be dropped rather than delivered. */
export function isExpired(task: Task, nowMs: number): boolean {
  return task.expiresAtMs !== null && task.expiresAtMs <= nowMs
}

/** The deployment version whose physical queue spools this task (null = the default queue). */
export function spoolVersionOf(task: Task): string | null {
  return task.versionDirective.kind === 'pinned' ? task.versionDirective.version : null
}
