/**
 * CpuWatch — how much of the machine's CPU went to processes that are not the bench's own,
 * so a step measured while something else used the CPU is flagged rather than reported as if
 * the machine had been ours (Linux /proc only).
 *
 * "Ours" is this process's tree plus each extra root's tree (the PostgreSQL postmaster, whose
 * backends it reaps): utime + stime + cutime + cstime of every member, so a child that exited
 * and was reaped still counts, through its parent. "Others" is the machine's busy time minus
 * ours, in cores (1.0 = one core fully used for the whole interval).
 *
 * Does not: attribute the CPU of a process that exits between two samples exactly (its whole
 * life moves into its reaper's counters, so ours is slightly over-counted then), or work off
 * Linux (every figure is NaN there).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'

/** One reading of the counters (jiffies). */
export interface CpuSample {
  readonly busy: number
  readonly total: number
  readonly ours: number
}

/** CPU use between two samples, in cores. */
export interface CpuShare {
  readonly othersCores: number
  readonly oursCores: number
  /** The 1-minute load average at the later sample. */
  readonly load1: number
}

const cores = cpus().length

function machine(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  const fields = line.trim().split(/\s+/).slice(1).map(Number)
  const total = fields.slice(0, 8).reduce((sum, value) => sum + value, 0)
  // idle and iowait are the not-busy columns.
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total }
}

interface ProcStat {
  readonly ppid: number
  readonly jiffies: number
}

function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    // fields[0] is state (field 3); utime..cstime are fields 14–17.
    const jiffies = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
    return { ppid: Number(fields[1]), jiffies }
  } catch {
    return null
  }
}

function treeJiffies(roots: ReadonlyArray<number>): number {
  const stats = new Map<number, ProcStat>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = readStat(Number(name))
    if (stat !== null) stats.set(Number(name), stat)
  }
  const children = new Map<number, number[]>()
  for (const [pid, stat] of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid])
  let sum = 0
  const seen = new Set<number>()
  const stack = [...roots]
  while (stack.length > 0) {
    const pid = stack.pop() as number
    if (seen.has(pid)) continue
    seen.add(pid)
    sum += stats.get(pid)?.jiffies ?? 0
    stack.push(...(children.get(pid) ?? []))
  }
  return sum
}

/** The postmaster's pid of the cluster behind `url` (a Unix-socket url from PostgresCluster), if it can be read. */
export function postmasterPidOf(url: string): number | null {
  const dir = new URL(url).searchParams.get('host')
  const file = dir === null ? null : `${dir}/data/postmaster.pid`
  if (file === null || !existsSync(file)) return null
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0])
  return Number.isSafeInteger(pid) ? pid : null
}

/** Watches this process's tree plus the trees of `extraRoots`. */
export function makeCpuWatch(extraRoots: ReadonlyArray<number>): { sample(): CpuSample; share(from: CpuSample, to: CpuSample): CpuShare } {
  const roots = [process.pid, ...extraRoots]
  return {
    sample() {
      if (!existsSync('/proc/stat')) return { busy: Number.NaN, total: Number.NaN, ours: Number.NaN }
      const { busy, total } = machine()
      return { busy, total, ours: treeJiffies(roots) }
    },
    share(from, to) {
      const elapsed = (to.total - from.total) / cores
      const ours = to.ours - from.ours
      return { othersCores: (to.busy - from.busy - ours) / elapsed, oursCores: ours / elapsed, load1: loadavg()[0] ?? Number.NaN }
    },
  }
}
