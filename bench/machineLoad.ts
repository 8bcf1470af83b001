/**
 * machineLoad — how much of the machine other processes used while a bench step ran.
 *
 * Reads /proc (Linux): the whole machine's busy CPU time from /proc/stat, less the CPU time of
 * the processes the bench owns — itself, its descendants (worker children) and the throwaway
 * PostgreSQL server (its postmaster and the postmaster's children). What remains is other
 * processes' share of the machine's capacity, as a percentage of all cores.
 *
 * Our CPU over a span is summed per process: a process that started meanwhile counts all its
 * ticks, one that exited meanwhile counts none (subtracting its lifetime's ticks, as a sum of
 * totals would, charged a whole pool connection's life to others when the pool closed it).
 *
 * Invariants: a step is `quiet` only if others used at most `othersCpuPercentQuiet` over the
 * whole step. Errors: a process of ours that exits during a span, or starts and exits between
 * two samples, has its CPU counted as others' (a step looks busier); /proc truncates each
 * process's counter to a tick, so each of our deltas may be a tick short, and others are
 * charged none of that — one tick per process of ours that ran is taken off them, the most
 * the truncation can add (on a short step with a dozen busy server processes that was most of
 * what flagged it busy).
 *
 * Does not: wait by itself, nor decide what to do with a busy step (bench/peers.ts does).
 * Off Linux it reports the load as unknown (`othersCpuPercent: NaN`, never quiet).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'

/** A step is quiet when other processes used at most this share of the machine: 5 % is well under one busy core on any machine we bench on, and above the few-tenths-of-a-percent an idle desktop shows. */
export const othersCpuPercentQuiet = 5

/** CPU counters at one instant. */
interface Sample {
  readonly busyTicks: number
  /** Time the hypervisor ran something else while this machine had work (part of `busyTicks`). */
  readonly stealTicks: number
  readonly totalTicks: number
  /** Our processes' CPU ticks by pid: this process and its descendants, and the PostgreSQL server's (`server`). */
  readonly ours: ReadonlyMap<number, { readonly ticks: number; readonly server: boolean }>
}

// Linux's clock ticks per second (USER_HZ), the unit of /proc's CPU times.
const ticksPerSecond = 100

/** Other processes' use of the machine over a span. */
export interface Load {
  /** Other processes' CPU, % of all cores (NaN when /proc cannot be read). */
  readonly othersCpuPercent: number
  /**
   * The part of `othersCpuPercent` the hypervisor took for other machines (steal): on a virtual
   * machine a step can be busy with no other process running on it at all.
   */
  readonly stealCpuPercent: number
  /** os.loadavg()[0] at the end of the span. */
  readonly loadAverage1m: number
  readonly quiet: boolean
  /** CPU this process and its descendants used over the span, ms (10 ms resolution; NaN off Linux). */
  readonly benchCpuMs: number
  /** CPU the PostgreSQL server's processes used over the span, ms (as `benchCpuMs`). */
  readonly serverCpuMs: number
}

function machineTicks(): { busyTicks: number; stealTicks: number; totalTicks: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  const fields = line.trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal: idle and iowait are not busy; guest time is already in user.
  const total = fields.slice(0, 8).reduce((sum, value) => sum + value, 0)
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
  return { busyTicks: total - idle, stealTicks: fields[7] ?? 0, totalTicks: total }
}

// utime + stime of one process, and its parent pid; null once it has exited.
function processTicks(pid: number): { ticks: number; parentPid: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name is parenthesised and may hold spaces; the fields after it are fixed.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { ticks: Number(fields[11]) + Number(fields[12]), parentPid: Number(fields[1]) }
  } catch {
    return null
  }
}

/** Tracks the bench's own processes: this one, its descendants, and the server rooted at `serverPid`. */
export interface LoadMeter {
  /** Starts a span. */
  start(): () => Load
  /** Sets the PostgreSQL postmaster whose process tree counts as ours. */
  setServerPid(pid: number): void
}

/** Makes a meter; each `start()` returns the function that ends its span. */
export function makeLoadMeter(): LoadMeter {
  const readable = existsSync('/proc/stat')
  let serverPid: number | null = null

  // The CPU ticks of every process of ours now, by pid, each marked bench's or the server's.
  const oursTicks = (): Map<number, { readonly ticks: number; readonly server: boolean }> => {
    const parents = new Map<number, number>()
    const ticks = new Map<number, number>()
    for (const name of readdirSync('/proc')) {
      const pid = Number(name)
      if (!Number.isInteger(pid)) continue
      const stat = processTicks(pid)
      if (stat === null) continue
      parents.set(pid, stat.parentPid)
      ticks.set(pid, stat.ticks)
    }
    const ours = new Map<number, { readonly ticks: number; readonly server: boolean }>()
    for (const [pid, value] of ticks) {
      for (let at: number | undefined = pid, depth = 0; at !== undefined && at > 1 && depth < 64; at = parents.get(at), depth++) {
        if (at === process.pid || (serverPid !== null && at === serverPid)) {
          ours.set(pid, { ticks: value, server: at !== process.pid })
          break
        }
      }
    }
    return ours
  }

  const sample = (): Sample => ({ ...machineTicks(), ours: oursTicks() })

  // Our processes' ticks over a span, summed per process: one that started meanwhile counts all
  // its ticks, one that exited meanwhile counts none (its lifetime's ticks were in the first
  // sample; subtracting them from the machine's busy time would charge a lifetime to others).
  // `processes`: how many of them ran, each delta short by up to one tick (/proc truncates).
  const oursOver = (before: Sample, after: Sample): { bench: number; server: number; processes: number } => {
    let bench = 0
    let server = 0
    let processes = 0
    for (const [pid, now] of after.ours) {
      const delta = now.ticks - (before.ours.get(pid)?.ticks ?? 0)
      if (delta > 0) processes++
      if (now.server) server += delta
      else bench += delta
    }
    return { bench, server, processes }
  }


  return {
    setServerPid(pid) {
      serverPid = pid
    },
    start() {
      if (!readable) return () => ({ othersCpuPercent: Number.NaN, stealCpuPercent: Number.NaN, loadAverage1m: loadavg()[0] ?? Number.NaN, quiet: false, benchCpuMs: Number.NaN, serverCpuMs: Number.NaN })
      const before = sample()
      return () => {
        const after = sample()
        const total = after.totalTicks - before.totalTicks
        const { bench, server, processes } = oursOver(before, after)
        // Each of our processes that ran may be a tick short: others are given none of that.
        const others = Math.max(0, after.busyTicks - before.busyTicks - bench - server - processes)
        const othersCpuPercent = total <= 0 ? 0 : Math.max(0, (100 * others) / total)
        return {
          othersCpuPercent,
          // Part of the others' share: ticks read at slightly different moments must not make it more.
          stealCpuPercent: total <= 0 ? 0 : Math.min(othersCpuPercent, (100 * (after.stealTicks - before.stealTicks)) / total),
          loadAverage1m: loadavg()[0] ?? Number.NaN,
          quiet: othersCpuPercent <= othersCpuPercentQuiet,
          benchCpuMs: (bench * 1000) / ticksPerSecond,
          serverCpuMs: (server * 1000) / ticksPerSecond,
        }
      }
    },
  }
}

/** The number of cores, for the header. */
export const coreCount = (): number => cpus().length
