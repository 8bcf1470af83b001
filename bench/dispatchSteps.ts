/**
 * Dispatch steps bench — `npx tsx bench/dispatchSteps.ts [--cycles N] [--rounds N]`.
 *
 * What the claim protocol as a statechart costs a job, against the same bookkeeping written as
 * mutable fields (the floor), measured in the same run, alternating rounds:
 *
 * - **idle worker**: the cycle a job takes to a worker that waits for it (a producer's job on
 *   another engine, or a due time): the pass starts, the job is handed to the parked claim, the
 *   store answers, the claim unparks, and the worker's next claim joins the line, finds nothing
 *   and parks again on the line's poll (7 steps of the machine);
 * - **busy drain**: a worker whose next claim goes straight to the store: one `store.answered`
 *   step for the claims of a turn (counted here as one job per step).
 *
 * The machine runs through the stepper the runner uses (DispatchStepper.ts); the floor updates
 * the same lists and counters in place. Prints µs per job for each and machine ÷ floor. A cost,
 * not a claim about throughput: a job's statement and handler cost hundreds of µs.
 */
import { parseArgs } from 'node:util'
import { dispatchMachine } from '../src/machines/DispatchMachine.ts'
import type { DispatchEvent } from '../src/machines/DispatchProtocol.ts'
import { makeDispatchStepper } from '../src/machines/DispatchStepper.ts'
import type { JobRecord } from '../src/persistence/jobs/JobStore.ts'

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' } } })
const cycles = Number(values.cycles)
const rounds = Number(values.rounds)

const job = { id: 'j', queue: 'q', state: 'processing', claimToken: 't' } as unknown as JobRecord

// The idle worker's cycle, for claim `id` parked and claim `id + 1` joining after the handler.
function idleCycle(id: number): ReadonlyArray<DispatchEvent> {
  return [
    { type: 'pass.started' },
    { type: 'job.handed', job, claimId: null },
    { type: 'store.answered', generation: id, asked: 1, claimed: 1, overlapped: false },
    { type: 'claim.unparked', claimId: id, handed: true },
    { type: 'store.answered', generation: id + 1, asked: 1, claimed: 0, overlapped: false },
    { type: 'claim.queued', claimId: id + 1 },
    { type: 'claim.parked', claimId: id + 1 },
  ]
}

function machineIdle(count: number): number {
  const stepper = makeDispatchStepper(dispatchMachine)
  let snapshot = stepper.start('q')
  for (const event of [{ type: 'claim.queued', claimId: 1 }, { type: 'claim.parked', claimId: 1 }] as const) snapshot = stepper.step(snapshot, event)[0]
  let commands = 0
  const started = performance.now()
  for (let n = 1; n <= count; n++) {
    for (const event of idleCycle(n)) {
      const [next, asked] = stepper.step(snapshot, event)
      snapshot = next
      commands += asked.length
    }
  }
  const elapsed = performance.now() - started
  if (commands !== count) throw new Error(`expected one hand-over per cycle, got ${commands} commands`)
  return (elapsed * 1000) / count
}

// The floor: the same lists and counters as plain fields, updated in place.
function floorIdle(count: number): number {
  const state = { waiting: [1] as number[], parked: [1] as number[], linePolls: [1] as number[], generation: 0, drained: false, handed: 0 }
  const started = performance.now()
  for (let n = 1; n <= count; n++) {
    state.generation++
    state.drained = false
    const taker = state.waiting.shift()
    if (taker !== undefined) state.handed++
    state.parked = state.parked.filter((id) => id !== n)
    if (state.linePolls.length > state.parked.length + 1) state.linePolls.pop()
    if (state.generation === n) state.drained = true
    state.waiting.push(n + 1)
    state.parked.push(n + 1)
    if (state.linePolls.length === 0) state.linePolls.push(n + 1)
  }
  const elapsed = performance.now() - started
  if (state.handed !== count) throw new Error('floor lost a hand-over')
  return (elapsed * 1000) / count
}

function machineBusy(count: number): number {
  const stepper = makeDispatchStepper(dispatchMachine)
  let snapshot = stepper.start('q')
  const started = performance.now()
  for (let n = 0; n < count; n++) snapshot = stepper.step(snapshot, { type: 'store.answered', generation: 0, asked: 1, claimed: 1, overlapped: false })[0]
  return ((performance.now() - started) * 1000) / count
}

function floorBusy(count: number): number {
  const state = { generation: 0, drained: false, answered: 0 }
  const started = performance.now()
  for (let n = 0; n < count; n++) {
    state.answered++
    if (state.generation !== 0 || n < 0) state.drained = true
  }
  const elapsed = performance.now() - started
  if (state.answered !== count) throw new Error('floor lost an answer')
  return (elapsed * 1000) / count
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

function compare(name: string, machine: (count: number) => number, floor: (count: number) => number): void {
  machine(Math.min(cycles, 20_000))
  floor(Math.min(cycles, 20_000))
  const machineUs: number[] = []
  const floorUs: number[] = []
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      machineUs.push(machine(cycles))
      floorUs.push(floor(cycles))
    } else {
      floorUs.push(floor(cycles))
      machineUs.push(machine(cycles))
    }
  }
  const m = median(machineUs)
  const f = median(floorUs)
  console.log(`${name.padEnd(12)} machine ${m.toFixed(3)} µs/job · fields ${f.toFixed(3)} µs/job · machine − fields ${(m - f).toFixed(3)} µs/job · ratio ${(m / f).toFixed(1)}×`)
}

console.log(`dispatch steps: ${cycles} jobs per round, ${rounds} rounds alternating, medians`)
compare('idle worker', machineIdle, floorIdle)
compare('busy drain', machineBusy, floorBusy)
