/**
 * peerLatencyChild — the worker process of bench/peers.ts's cross-process latency workload.
 *
 * Forked with `<library> <databaseUrl> <queue> <concurrency> <poolMax>`: opens the library,
 * starts its worker on the queue, says `{ kind: 'ready' }`, and records for every job the wall
 * clock at handler start minus the enqueue time the producer put in the payload. On
 * `{ kind: 'stop' }` it stops the worker, sends `{ kind: 'samples', latenciesMs }`, closes the
 * library and exits.
 *
 * Does not: send anything per job (IPC per job would load the machine it measures).
 */
import { type LibraryName, libraryNames, openPeer } from './peerLibraries.ts'

const wallClockMs = (): number => performance.timeOrigin + performance.now()

const [name, databaseUrl, queue, concurrencyText, poolMaxText] = process.argv.slice(2)
if (!libraryNames.includes(name as LibraryName) || databaseUrl === undefined || queue === undefined) {
  throw new Error('usage: peerLatencyChild.ts <library> <databaseUrl> <queue> <concurrency> <poolMax>')
}
const send = (message: unknown): Promise<void> => new Promise((resolve, reject) => process.send?.(message, undefined, {}, (error) => (error === null ? resolve() : reject(error))))

const session = await openPeer(name as LibraryName, { databaseUrl, poolMax: Number(poolMaxText) })
await session.prepareQueue(queue)
const latenciesMs: number[] = []
const stop = await session.startLatencyWorker(queue, Number(concurrencyText), (payload) => {
  if (payload.t !== undefined) latenciesMs.push(wallClockMs() - payload.t)
})
process.on('message', (message: { kind?: string }) => {
  if (message.kind === 'count') void send({ kind: 'count', count: latenciesMs.length })
  if (message.kind !== 'stop') return
  void (async () => {
    await stop()
    await send({ kind: 'samples', latenciesMs })
    await session.close()
    process.exit(0)
  })()
})
await send({ kind: 'ready' })
