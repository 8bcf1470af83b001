/**
 * `matchbox lifecycle` — prints upstream Matching's walkthrough of one physical queue, stage by stage:
 * what happened, what the store holds (persistedQueue) and what the loaded owner holds in
 * memory (loadedQueueProgress). `--json` prints the same stages as JSON.
 *
 * Does not: run the walkthrough's logic (LifecycleWalkthrough.ts) or touch a durable store.
 */
import type { Command } from 'commander'
import { formatBySubqueue } from './PersistedQueue.ts'
import { type LifecycleReport, type LifecycleStage, runLifecycleWalkthrough } from './LifecycleWalkthrough.ts'
import type { Terminal } from './Terminal.ts'

const ids = (values: ReadonlyArray<number>): string => `{${values.join(', ')}}`

function renderStage(terminal: Terminal, stage: LifecycleStage): void {
  const { colors: c } = terminal
  terminal.line(c.bold(`${stage.step}. ${stage.title}`))
  for (const sentence of stage.narration) terminal.line(`   ${sentence}`)
  const persisted = stage.persistedQueue
  const rows = persisted.tasks.length === 0 ? 'none' : persisted.tasks.map((task) => task.taskId).join(', ')
  terminal.line(`   ${c.cyan('persistedQueue')}`)
  terminal.line(`     range ${persisted.rangeId} · last task id ${persisted.lastTaskId} · ack level per subqueue ${formatBySubqueue(persisted.ackLevels)}`)
  terminal.line(`     stored rows: ${rows} (${persisted.storedRows})`)
  terminal.line(`   ${c.cyan('loadedQueueProgress')}`)
  const loaded = stage.loadedQueueProgress
  if (loaded === null) {
    terminal.line(`     ${c.dim('no owner loaded: read level and outstanding deliveries are gone')}`)
  } else {
    terminal.line(`     generation ${loaded.generation} · ${loaded.state} · range ${loaded.rangeId} · outstanding ${loaded.outstanding} · with History ${loaded.deliveriesWithHistory}`)
    for (const subqueue of loaded.subqueues) {
      terminal.line(
        `     subqueue ${subqueue.subqueue}: read level ${subqueue.readLevel} · ack level ${subqueue.ackLevel} (saved ${subqueue.savedAckLevel})` +
          ` · outstanding ${ids(subqueue.outstandingTaskIds)} · completed above ack ${ids(subqueue.completedAboveAck)}`,
      )
    }
    if (loaded.subqueues.length === 0) terminal.line(`     ${c.dim('nothing read yet')}`)
  }
  const unloaded = stage.unloadedProgress
  if (unloaded !== undefined) {
    terminal.line(`   ${c.cyan('reported at unload')}`)
    terminal.line(
      `     ${unloaded.reason.kind} · range ${unloaded.rangeId} · saved ack level ${formatBySubqueue(unloaded.savedAckLevels)}` +
        ` · read level ${formatBySubqueue(unloaded.readLevels)} · outstanding ${unloaded.outstanding}`,
    )
  }
  terminal.line()
}

/** Prints a lifecycle report as text. */
export function renderLifecycle(terminal: Terminal, report: LifecycleReport): void {
  terminal.line(terminal.colors.bold(`Matchbox lifecycle — one physical queue, ${report.queue}`))
  terminal.line(`Memory store, virtual clock, seed ${report.seed}: the same output on every run.`)
  terminal.line()
  for (const stage of report.stages) renderStage(terminal, stage)
}

/** Registers `matchbox lifecycle`. */
export function registerLifecycle(program: Command, terminal: Terminal): void {
  program
    .command('lifecycle')
    .description("walk one physical queue through load, spool, out-of-order dispatch, checkpoint, unload and reload, on a memory store")
    .option('--json', 'print the stages as JSON')
    .action(async (options: { readonly json?: boolean }) => {
      const report = await runLifecycleWalkthrough()
      if (options.json === true) terminal.json(report)
      else renderLifecycle(terminal, report)
    })
}
