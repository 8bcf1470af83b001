/**
 * A small HTTP service embedding Matchbox (node:http, no framework).
 *
 *   POST /jobs/<queue>          body: JSON payload   → 202 { id }
 *   GET  /jobs/<queue>/<id>                          → 200 the job (pending, processing or dead) | 404
 *
 * Jobs of the `emails` queue are processed in-process by `work` (4 at a time); a job whose
 * payload has `"fail": true` throws, so you can watch retries and the dead letter. The
 * maintenance recipe of seed 004 §6 runs too: a schedule every 300 s whose worker sweeps expired
 * jobs, with `runSchedules` called every minute (any number of instances may call it; one fires).
 *
 * Store: PostgreSQL when DATABASE_URL is set, else the embedded store (PGlite) — in memory, or
 * in MATCHBOX_DATA_DIR when set. SIGTERM/SIGINT shut down cleanly: stop accepting requests,
 * let in-flight handlers finish and ack, close the engine.
 *
 *   npx tsx examples/service.ts
 *   curl -X POST localhost:3000/jobs/emails -d '{"to":"ada@example.com"}'
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { isMatchboxError, open, type StoreOption } from '../src/index.ts'

const port = Number(process.env.PORT ?? 3000)
const store: StoreOption = process.env.DATABASE_URL
  ? { databaseUrl: process.env.DATABASE_URL }
  : process.env.MATCHBOX_DATA_DIR
    ? { dataDir: process.env.MATCHBOX_DATA_DIR }
    : 'embedded'
const sweptQueues = ['emails']

const mb = await open({ store, ...(process.env.HOST_ID ? { hostId: process.env.HOST_ID } : {}) })
const emails = mb.queue('emails', { visibilityTimeoutS: 60, maxAttempts: 3, deadLetterRetentionS: 7 * 24 * 3600 })
// Jobs carry the options of the handle that enqueued them, so POSTs to `emails` go through this one.
const handles = new Map([['emails', emails]])
const queueOf = (name: string) => handles.get(name) ?? mb.queue(name)

const stopEmails = emails.work(
  async (job) => {
    const payload = job.payload as { to?: string; fail?: boolean }
    console.log(`emails: sending to ${payload.to ?? '?'} (job ${job.id}, attempt ${job.attempts}/${job.maxAttempts})`)
    if (payload.fail === true) throw new Error('the mail server said no')
  },
  { concurrency: 4, onError: (error, job) => console.error(`emails: could not settle ${job?.id ?? '-'}: ${String(error)}`) },
)

await mb.schedule('maintenance', '@every 300s', 'maintenance', { queues: sweptQueues })
const stopMaintenance = mb.queue('maintenance').work(async (job) => {
  for (const name of (job.payload as { queues: string[] }).queues) {
    const { dead, purged } = await mb.queue(name).sweepExpired()
    if (dead + purged > 0) console.log(`maintenance: ${name}: ${dead} expired, ${purged} purged`)
  }
})
const scheduleTimer = setInterval(() => {
  mb.runSchedules().catch((error: unknown) => console.error(`runSchedules: ${String(error)}`))
}, 60_000)

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
  const [, root, queue, id] = (request.url ?? '/').split('?')[0]?.split('/') ?? []
  const handle = async (): Promise<void> => {
    if (root !== 'jobs' || queue === undefined || queue === '') return reply(response, 404, { error: 'try POST /jobs/<queue>' })
    if (request.method === 'POST' && id === undefined) {
      let payload: unknown
      try {
        payload = await body(request)
      } catch {
        return reply(response, 400, { error: 'the body is not JSON' })
      }
      return reply(response, 202, { id: await queueOf(queue).enqueue(payload) })
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
  clearInterval(scheduleTimer)
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await Promise.all([stopEmails(), stopMaintenance()])
  await mb.close()
  console.log('stopped cleanly')
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal).then(() => process.exit(0)))
