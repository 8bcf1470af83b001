/**
 * A small HTTP service embedding Matchbox (node:http, no framework).
 *
 *   POST /jobs/<queue>          body: JSON payload   → 202 { id }  (an Idempotency-Key header becomes the job key)
 *   GET  /jobs/<queue>                               → 200 { pending, processing, dead }
 *   GET  /jobs/<queue>/<id>                          → 200 the job (pending, processing or dead) | 404
 *   POST /jobs/<queue>/<id>/retry                    → 200 a dead job back as a fresh pending one | 409
 *
 * Jobs of the `emails` queue are processed in-process by `work` (4 at a time); a job whose
 * payload has `"fail": true` throws, so you can watch retries, the error kept on the job, and the
 * dead letter. Housekeeping is one line: `startMaintenance` runs the schedules every minute and
 * sweeps expired jobs every 5 minutes (any number of instances may run it; one fires each
 * schedule). Events feed metrics (shaped like OpenTelemetry counters and histograms) and a
 * pino-compatible logger gets retries, deaths and store outages.
 *
 * Store: PostgreSQL when DATABASE_URL is set, else the embedded store (PGlite) — in memory, or
 * in MATCHBOX_DATA_DIR when set. SIGTERM/SIGINT shut down cleanly: stop accepting requests,
 * let in-flight handlers finish and ack, close the engine.
 *
 *   npx tsx examples/service.ts
 *   curl -X POST localhost:3000/jobs/emails -d '{"to":"ada@example.com"}'
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { isMatchboxError, type Logger, type MatchboxEvent, open, type StoreOption } from '../src/index.ts'

interface Email {
  readonly to: string
  readonly fail?: boolean
}

const port = Number(process.env.PORT ?? 3000)
const store: StoreOption = process.env.DATABASE_URL
  ? { databaseUrl: process.env.DATABASE_URL }
  : process.env.MATCHBOX_DATA_DIR
    ? { dataDir: process.env.MATCHBOX_DATA_DIR }
    : 'embedded'
const sweptQueues = ['emails']

// pino fits as is (`open({ logger: pino() })`); this stand-in prints one JSON line per record.
const logger: Logger = {
  info: (object, message) => console.log(JSON.stringify({ level: 'info', message, ...object })),
  warn: (object, message) => console.warn(JSON.stringify({ level: 'warn', message, ...object })),
  error: (object, message) => console.error(JSON.stringify({ level: 'error', message, ...object })),
}

// With OpenTelemetry: `const meter = metrics.getMeter('my-service')`, then
// `meter.createCounter('matchbox.jobs')` and `meter.createHistogram('matchbox.job.duration', { unit: 'ms' })`
// in place of these two; `add` and `record` take the same arguments.
const jobsCounter = { add: (value: number, attributes: Record<string, string>) => void [value, attributes] }
const durationHistogram = { record: (value: number, attributes: Record<string, string>) => void [value, attributes] }
function recordMetrics(event: MatchboxEvent): void {
  if (event.type === 'store.unavailable' || event.type === 'store.recovered') return
  jobsCounter.add(1, { queue: event.queue, outcome: event.type })
  if (event.type === 'job.started') durationHistogram.record(event.lagMs, { queue: event.queue, phase: 'waiting' })
  else durationHistogram.record(event.durationMs, { queue: event.queue, phase: 'running', outcome: event.type })
}

const mb = await open({ store, logger, onEvent: recordMetrics, ...(process.env.HOST_ID ? { hostId: process.env.HOST_ID } : {}) })
const emailOptions = { visibilityTimeoutS: 60, maxAttempts: 3, deadLetterRetentionS: 7 * 24 * 3600 }
const emails = mb.queue<Email>('emails', emailOptions)
// Jobs carry the options of the handle that enqueued them, so POSTs to `emails` use the same ones.
const queueOf = (name: string) => mb.queue(name, name === 'emails' ? emailOptions : {})

const stopEmails = emails.work(
  async (job) => {
    console.log(`emails: sending to ${job.payload.to} (job ${job.id}, attempt ${job.attempts}/${job.maxAttempts})`)
    if (job.payload.fail === true) throw new Error('the mail server said no')
  },
  { concurrency: 4, onError: (error, job) => console.error(`emails: could not settle ${job?.id ?? '-'}: ${String(error)}`) },
)

// A daily digest at 08:00 Paris time, whichever instance leads; housekeeping in one line.
await mb.schedule('daily-digest', '0 8 * * *', 'emails', { to: 'team@example.com' }, { timezone: 'Europe/Paris' })
const stopMaintenance = mb.startMaintenance({ schedulesEveryMs: 60_000, sweepEveryMs: 300_000, queues: sweptQueues })

async function body(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return text === '' ? null : JSON.parse(text)
}

function reply(response: ServerResponse, status: number, value: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' })
  response.end(JSON.stringify(value))
}

const server = createServer((request, response) => {
  const [, root, queue, id, action] = (request.url ?? '/').split('?')[0]?.split('/') ?? []
  const handle = async (): Promise<void> => {
    if (root !== 'jobs' || queue === undefined || queue === '') return reply(response, 404, { error: 'try POST /jobs/<queue>' })
    if (request.method === 'POST' && id === undefined) {
      let payload: unknown
      try {
        payload = await body(request)
      } catch {
        return reply(response, 400, { error: 'the body is not JSON' })
      }
      // A client retrying the same request gets the same job, not a second one.
      const key = request.headers['idempotency-key']
      return reply(response, 202, { id: await queueOf(queue).enqueue(payload, typeof key === 'string' ? { key } : {}) })
    }
    if (request.method === 'GET' && id === undefined) return reply(response, 200, await queueOf(queue).counts())
    if (request.method === 'POST' && id !== undefined && action === 'retry') {
      const result = await queueOf(queue).retryDead(decodeURIComponent(id))
      return result.retried ? reply(response, 200, result.job) : reply(response, 409, result)
    }
    if (request.method === 'GET' && id !== undefined) {
      const job = await queueOf(queue).getJob(decodeURIComponent(id))
      return job === null ? reply(response, 404, { error: 'no such job' }) : reply(response, 200, job)
    }
    reply(response, 405, { error: 'method not allowed' })
  }
  handle().catch((error: unknown) => {
    // Typed Matchbox errors say whether the caller can fix it (InvalidInput) or retry (Unavailable).
    if (isMatchboxError(error)) return reply(response, error._tag === 'InvalidInput' ? 400 : 503, { error: error.message })
    console.error(error)
    reply(response, 500, { error: 'internal error' })
  })
})

server.listen(port, () => console.log(`matchbox example on http://localhost:${port} (${typeof store === 'string' ? store : Object.keys(store)[0]} store, host ${mb.hostId})`))

let shuttingDown = false
async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return
  shuttingDown = true
  console.log(`${signal}: stopping`)
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await Promise.all([stopEmails(), stopMaintenance()])
  // close would stop both too; stopping first lets in-flight handlers finish before the server's last replies.
  await mb.close()
  console.log('stopped cleanly')
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal).then(() => process.exit(0)))
