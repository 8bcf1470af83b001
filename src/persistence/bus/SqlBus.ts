/**
 * SqlBus — the Bus over PostgreSQL's LISTEN/NOTIFY: `pg_notify` on the shared pool sends, one
 * dedicated LISTEN connection per subscription hears the due channel and the host's channel.
 *
 * A broken LISTEN connection is re-opened with capped exponential back-off on the injected
 * clock (`busRelistenInitialMs` → `busRelistenMaxMs`); notifications sent while it was down are
 * gone, so the subscriber is told (`onGap`) and re-scans the store.
 *
 * Sends of one turn share one statement (`pg_notify` over `unnest`, through a MicroBatcher):
 * an owner handing over a batch of claimed jobs, or a worker forwarding its polls, costs one
 * round trip, not one per message. PostgreSQL delivers each notification on its own, in order.
 *
 * Invariants: a host message carries its receiver (`to`); a listener drops messages for another
 * host (two host ids may hash to one channel). Payloads over `busMessageBytesMax` are refused
 * before sending (an `InvalidInput`: the sender must send a reference instead).
 *
 * Does not: own the driver (the engine closes it), or retry a send: a lost message is the
 * caller's timeout.
 */
import { InvalidInput, isMatchboxError, type MatchboxError, Unavailable } from '../../domain/errors.ts'
import type { JsonValue } from '../../domain/Json.ts'
import type { CancelTimer, Clock } from '../../kernel/Clock.ts'
import { busNotifyBatchMax, busRelistenInitialMs, busRelistenMaxMs, jobBatchesInFlightMax } from '../../kernel/Limits.ts'
import { makeMicroBatcher } from '../../kernel/MicroBatcher.ts'
import type { Driver, Listener } from '../sql/Driver.ts'
import { makeSqlSession } from '../sql/SqlSession.ts'
import { type Bus, busMessageBytesMax } from './Bus.ts'
import { dueChannelOf, dueSignalOf, dueSignalPayload, hostChannelOf } from './Channels.ts'

/** What a SQL bus needs. */
export interface SqlBusOptions {
  /** A driver that can `listen` (the postgres driver). */
  readonly driver: Driver
  /** The schema whose engines talk on this bus. */
  readonly schema: string
  readonly clock: Clock
  /** Hears every failure the bus swallowed (a lost LISTEN connection, a failed re-listen). */
  readonly onError?: (error: MatchboxError | Error) => void
}

const notifySql = 'SELECT pg_notify(sent.channel, sent.payload) FROM unnest($1::text[], $2::text[]) AS sent(channel, payload)'

/** Makes a bus over `driver`; throws `InvalidInput` when the driver cannot listen. */
export function makeSqlBus(options: SqlBusOptions): Bus {
  const { driver, clock } = options
  const listen = driver.listen?.bind(driver)
  if (listen === undefined) throw new InvalidInput({ field: 'store', reason: 'this store cannot hear other processes (no LISTEN): use a PostgreSQL store for several engines' })
  const session = makeSqlSession(driver)
  const dueChannel = dueChannelOf(options.schema)
  const stops = new Set<() => Promise<void>>()
  let closed = false

  const notifyBatched = makeMicroBatcher<{ readonly channel: string; readonly payload: string }, void>({
    run: async (sent) => {
      await session.write('notify', notifySql, [sent.map((one) => one.channel), sent.map((one) => one.payload)])
      return sent.map(() => undefined)
    },
    sizeMax: busNotifyBatchMax,
    inFlightMax: jobBatchesInFlightMax,
  })

  const notify = async (channel: string, payload: string): Promise<void> => {
    if (Buffer.byteLength(payload, 'utf8') > busMessageBytesMax) throw new InvalidInput({ field: 'message', reason: `is longer than ${busMessageBytesMax} bytes` })
    await notifyBatched({ channel, payload })
  }

  return {
    kind: 'postgres',

    signalDue: (queue, dueMs) => notify(dueChannel, dueSignalPayload(queue, dueMs)),

    send: (hostId, message) => notify(hostChannelOf(options.schema, hostId), JSON.stringify({ to: hostId, message })),

    async subscribe(hostId, handlers) {
      const hostChannel = hostChannelOf(options.schema, hostId)
      let listener: Listener | null = null
      let retryTimer: CancelTimer | null = null
      let delayMs = busRelistenInitialMs
      let stopped = false

      const onNotification = (channel: string, payload: string): void => {
        if (channel === dueChannel) return handlers.onDue(...dueSignalOf(payload))
        if (channel !== hostChannel) return
        let envelope: { to?: unknown; message?: JsonValue }
        try {
          envelope = JSON.parse(payload) as typeof envelope
        } catch {
          return
        }
        if (envelope.to === hostId && envelope.message !== undefined) handlers.onMessage(envelope.message)
      }
      const report = (error: unknown): void => {
        if (error instanceof Error || isMatchboxError(error)) options.onError?.(error as Error)
      }
      const open = async (): Promise<void> => {
        listener = await listen([dueChannel, hostChannel], onNotification, (error) => {
          listener = null
          report(error)
          reopenLater()
        })
      }
      const reopenLater = (): void => {
        if (stopped || closed) return
        retryTimer = clock.setTimer(delayMs, () => {
          retryTimer = null
          open().then(
            () => {
              delayMs = busRelistenInitialMs
              handlers.onGap?.()
            },
            (error: unknown) => {
              report(error)
              delayMs = Math.min(busRelistenMaxMs, delayMs * 2)
              reopenLater()
            },
          )
        })
      }
      try {
        await open()
      } catch (error) {
        throw toUnavailable(error)
      }
      const stop = async (): Promise<void> => {
        stopped = true
        stops.delete(stop)
        retryTimer?.()
        await listener?.close()
      }
      stops.add(stop)
      return stop
    },

    async close() {
      closed = true
      for (const stop of Array.from(stops)) await stop() // a snapshot: each stop removes itself
    },
  }
}

function toUnavailable(error: unknown): unknown {
  if (isMatchboxError(error)) return error
  return new Unavailable({ operation: 'listen', detail: error instanceof Error ? error.message : String(error), maybeCommitted: false })
}
