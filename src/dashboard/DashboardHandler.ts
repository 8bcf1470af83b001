/**
 * DashboardHandler — the operator's web dashboard as a `node:http` request handler:
 * `dashboardHandler(mb, options)` answers `(request, response)` and mounts under any path
 * prefix, on a bare `http.createServer` or inside Express, Fastify or Hono (README).
 *
 * Routes (under `basePath`): GET / (queues), /queues/:queue (?state, ?before), /queues/:queue/
 * jobs/:id, /search, /schedules, /engines, /simulator (+ POST, and /simulator/:id/timeline),
 * /assets/dashboard.css; POST /actions. Anything else is a 404 page; a GET-only route POSTed to is 405.
 *
 * Invariants: with `basicAuth`, nothing is served without the credential (401); a POST needs the
 * CSRF token and a same-origin Origin/Referer (403) — and in read-only mode only the simulator
 * accepts one (actions are 403 and not shown); bodies are read up to `dashboardBodyBytesMax`
 * (413); a typed error answers with its own status and message (400 bad input, 404 not found,
 * 503 store unavailable), anything else with a bare 500 page — never a stack trace — and is
 * handed to `onError`. Every page is sent with a Content-Security-Policy that allows no script.
 *
 * Does not: open or close the engine (the caller owns it), or listen (the CLI's command does).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { InvalidInput, isMatchboxError } from '../domain/errors.ts'
import { validateName } from '../domain/QueueKey.ts'
import { Ids } from '../kernel/Ids.ts'
import { dashboardBodyBytesMax, dashboardCountCap, dashboardFairnessKeysMax, dashboardPageSize, dashboardQueuesMax, dashboardReplaysKept } from '../kernel/Limits.ts'
import { secretHex } from '../kernel/Secrets.ts'
import { internalsOf } from '../jobs/EngineInternals.ts'
import type { Matchbox } from '../jobs/Matchbox.ts'
import { type DashboardReads, makeContractReads, type QueueSummary } from '../persistence/dashboard/DashboardReads.ts'
import { makeSqlDashboardReads } from '../persistence/dashboard/sql/SqlDashboardReads.ts'
import type { JobState } from '../persistence/jobs/JobStore.ts'
import { performAction } from './Actions.ts'
import { type Html, html } from './Html.ts'
import { jobPage } from './JobPage.ts'
import { link, page, type PageContext, stylesheet } from './Layout.ts'
import { jobStates, jobsPage, queuesPage } from './QueuePages.ts'
import { type BasicAuth, csrfTokenOf, isAuthorized, isCsrfToken, isSameOrigin, parseBasicAuth } from './Security.ts'
import { actionPage, enginesPage, errorPage, schedulesPage, simulatorPage, type SimulatorReplay } from './SystemPages.ts'

/** How a dashboard is mounted and what it allows. */
export interface DashboardOptions {
  /** The path prefix it is mounted at (`/jobs`); links are built under it. Default: the root. */
  readonly basePath?: string
  /** Show no actions and accept none. Default false. */
  readonly readOnly?: boolean
  /** Require this credential (`user:password` or an object) on every request. Default: none. */
  readonly basicAuth?: string | BasicAuth
  /** Key of the CSRF token; default: drawn at random per handler. Give one so several processes agree. */
  readonly secret?: string
  /** Replays a simulator failure file (the CLI passes the simulator's); absent: the page says so. */
  readonly simulator?: (failureFileText: string) => Promise<SimulatorReplay>
  /** Hears every error the dashboard did not expect (the response says only "internal error"). */
  readonly onError?: (error: unknown) => void
}

/** A `node:http` request handler. `next` (Express) is never called: the dashboard answers every request it gets. */
export type DashboardRequestHandler = (request: IncomingMessage, response: ServerResponse, next?: unknown) => void

/** A request the dashboard refuses with `status`. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly tag: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

const securityHeaders = {
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
}

// The timeline page draws with its own inline script and style: it is served sandboxed, in an
// opaque origin that can reach nothing of the dashboard's.
const timelineHeaders = {
  'content-security-policy': "sandbox allow-scripts; default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
}

function normalizeBasePath(basePath: string | undefined): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return ''
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(basePath)) throw new InvalidInput({ field: 'basePath', reason: 'must be a path like /jobs (letters, digits, . _ ~ - /)' })
  return basePath.replace(/\/+$/, '')
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request) {
    size += (chunk as Buffer).length
    if (size > dashboardBodyBytesMax) throw new Refusal(413, 'TooLarge', `request bodies are limited to ${dashboardBodyBytesMax} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function send(response: ServerResponse, status: number, body: Html | string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...securityHeaders, ...headers })
  response.end(body.toString())
}

function statusOf(error: unknown): { status: number; tag: string; message: string } | null {
  if (error instanceof Refusal) return { status: error.status, tag: error.tag, message: error.message }
  if (isMatchboxError(error)) {
    if (error._tag === 'InvalidInput' || error._tag === 'InvalidSpec') return { status: 400, tag: error._tag, message: error.message }
    return { status: 503, tag: error._tag, message: 'the store did not answer; try again' }
  }
  if (error instanceof Error && (error as { _tag?: unknown })._tag === 'JobNotFound') return { status: 404, tag: 'JobNotFound', message: error.message }
  return null
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw new Refusal(400, 'InvalidInput', 'the URL is not well-formed')
  }
}

function parseState(value: string | null): JobState {
  const state = value ?? 'pending'
  if (!(jobStates as ReadonlyArray<string>).includes(state)) throw new InvalidInput({ field: 'state', reason: 'must be pending, processing or dead' })
  return state as JobState
}

/** Everything one request is served with. */
interface Served {
  readonly mb: Matchbox
  readonly reads: DashboardReads
  readonly options: DashboardOptions
  readonly replays: Map<string, SimulatorReplay>
  readonly ids: Ids
}

// The queues with jobs, and the paused queues without any (listed so that they can be resumed), by name.
function withIdlePaused(queues: ReadonlyArray<QueueSummary>, paused: ReadonlyArray<{ readonly queue: string }>): QueueSummary[] {
  const empty = { count: 0, capped: false }
  const idle = paused.filter((entry) => !queues.some((queue) => queue.queue === entry.queue))
  const listed = [...queues, ...idle.map((entry) => ({ queue: entry.queue, pending: empty, processing: empty, dead: empty, scheduledLater: empty, oldestPendingCreatedAtMs: null, diedPerMinute: [], diedCapped: false }))]
  return listed.sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0))
}

async function getPage(served: Served, context: PageContext, segments: ReadonlyArray<string>, query: URLSearchParams, response: ServerResponse): Promise<void> {
  const { mb, reads } = served
  const [first, second, third, fourth, ...rest] = segments
  if (first === undefined) {
    const [queues, paused] = await Promise.all([reads.queues({ nowMs: context.nowMs, limit: dashboardQueuesMax, countCap: dashboardCountCap }), reads.pausedQueues({ limit: dashboardQueuesMax })])
    return send(response, 200, queuesPage(context, withIdlePaused(queues, paused), reads.indexed, new Map(paused.map((entry) => [entry.queue, entry.pausedAtMs]))))
  }
  if (first === 'assets' && second === 'dashboard.css' && third === undefined) return send(response, 200, stylesheet, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'max-age=300' })
  if (first === 'queues' && second !== undefined && third === undefined) {
    const queue = validateName('queue', second)
    const state = parseState(query.get('state'))
    const before = query.get('before')
    const [jobs, backlog] = await Promise.all([
      reads.jobsPage({ queue, state, limit: dashboardPageSize, beforeId: before === null ? null : validateName('before', before) }),
      state === 'pending' && before === null ? reads.pendingByFairnessKey({ queue, limit: dashboardFairnessKeysMax, countCap: dashboardCountCap }) : null,
    ])
    const next = jobs.length === dashboardPageSize ? (jobs.at(-1)?.id ?? null) : null
    return send(response, 200, jobsPage(context, queue, state, jobs, next, before !== null, backlog))
  }
  if (first === 'queues' && second !== undefined && third === 'jobs' && fourth !== undefined && rest.length === 0) {
    const queue = validateName('queue', second)
    const [job] = await reads.findJobs({ text: validateName('id', fourth), queue, limit: 1 })
    if (job === undefined || job.id !== fourth) throw new Refusal(404, 'JobNotFound', `no job ${fourth} in queue ${queue} (acked, cancelled, purged or never there)`)
    return send(response, 200, jobPage(context, job))
  }
  if (first === 'search' && second === undefined) return search(served, context, query, response)
  if (first === 'schedules' && second === undefined) return send(response, 200, schedulesPage(context, await mb.listSchedules()))
  if (first === 'engines' && second === undefined) {
    const [hosts, physicalQueues] = await Promise.all([reads.hosts({ limit: 1_000 }), reads.physicalQueues({ limit: 1_000 })])
    return send(response, 200, enginesPage(context, { selfHostId: mb.hostId, hosts: mb.hosts().length === 0 ? [] : hosts, physicalQueues }))
  }
  if (first === 'simulator') return simulatorGet(served, context, second, third, response)
  throw new Refusal(404, 'NotFound', 'no such page')
}

async function search(served: Served, context: PageContext, query: URLSearchParams, response: ServerResponse): Promise<void> {
  const text = validateName('q', (query.get('q') ?? '').trim())
  const queueText = (query.get('queue') ?? '').trim()
  const queue = queueText === '' ? null : validateName('queue', queueText)
  const found = await served.reads.findJobs({ text, queue, limit: dashboardPageSize })
  if (found.length === 1 && found[0] !== undefined) {
    response.writeHead(303, { location: link(context, `/queues/${encodeURIComponent(found[0].queue)}/jobs/${encodeURIComponent(found[0].id)}`), ...securityHeaders })
    return void response.end()
  }
  const items = found.map((job) => html`<li><a href="${link(context, `/queues/${encodeURIComponent(job.queue)}/jobs/${encodeURIComponent(job.id)}`)}"><code>${job.id}</code></a> in ${job.queue} (${job.state})</li>`)
  const body = found.length === 0 ? html`<p class="muted">No job has the id ${text}${queue === null ? ' (give a queue to search keys)' : html`, or the key ${text} in ${queue}`}.</p>` : html`<ul>${items}</ul>`
  send(response, found.length === 0 ? 404 : 200, page(context, 'Search', body))
}

function simulatorGet(served: Served, context: PageContext, id: string | undefined, part: string | undefined, response: ServerResponse): void {
  const available = served.options.simulator !== undefined
  if (id === undefined) return send(response, 200, simulatorPage(context, available, null))
  const result = served.replays.get(id)
  if (result === undefined) throw new Refusal(404, 'NotFound', 'no such replay (the dashboard keeps the latest few, in memory)')
  if (part === 'timeline') {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...timelineHeaders })
    return void response.end(result.timelineHtml)
  }
  if (part !== undefined) throw new Refusal(404, 'NotFound', 'no such page')
  send(response, 200, simulatorPage(context, available, { id, result }))
}

async function post(served: Served, context: PageContext, request: IncomingMessage, segments: ReadonlyArray<string>, response: ServerResponse): Promise<void> {
  const route = segments.join('/')
  if (route !== 'actions' && route !== 'simulator') throw new Refusal(segments.length === 0 || ['queues', 'search', 'schedules', 'engines'].includes(segments[0] ?? '') ? 405 : 404, 'NotFound', 'nothing to post here')
  if (!isSameOrigin(request)) throw new Refusal(403, 'Forbidden', 'the form was not sent from this dashboard')
  const form = new URLSearchParams(await readBody(request))
  if (!isCsrfToken(form.get('csrf'), context.csrfToken)) throw new Refusal(403, 'Forbidden', 'the form has no valid CSRF token; reload the page and try again')
  if (route === 'simulator') {
    const simulate = served.options.simulator
    if (simulate === undefined) throw new Refusal(404, 'NotFound', 'this dashboard was mounted without the simulator')
    const result = await simulate(form.get('failure') ?? '')
    const id = served.ids.next('replay')
    served.replays.set(id, result)
    for (const old of served.replays.keys()) if (served.replays.size > dashboardReplaysKept) served.replays.delete(old)
    response.writeHead(303, { location: link(context, `/simulator/${id}`), ...securityHeaders })
    return void response.end()
  }
  if (context.readOnly) throw new Refusal(403, 'Forbidden', 'this dashboard is read-only')
  send(response, 200, actionPage(context, await performAction(served.mb, served.reads, form)))
}

function readsOf(mb: Matchbox): { reads: DashboardReads; now: () => number } {
  const internals = internalsOf(mb)
  if (internals === null) throw new InvalidInput({ field: 'mb', reason: 'must be an engine made by open()' })
  return { reads: internals.sql === null ? makeContractReads(internals.jobStore) : makeSqlDashboardReads(internals.sql.driver, internals.sql.schema), now: internals.now }
}

/** The dashboard over engine `mb` (made by `open`), as a `node:http` request handler. */
export function dashboardHandler(mb: Matchbox, options: DashboardOptions = {}): DashboardRequestHandler {
  const basePath = normalizeBasePath(options.basePath)
  const auth = options.basicAuth === undefined ? null : typeof options.basicAuth === 'string' ? parseBasicAuth(options.basicAuth) : options.basicAuth
  const csrfToken = csrfTokenOf(options.secret ?? secretHex())
  const { reads, now } = readsOf(mb)
  const served: Served = { mb, reads, options, replays: new Map(), ids: new Ids() }
  const readOnly = options.readOnly === true
  const answer = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const context: PageContext = { basePath, readOnly, csrfToken, nowMs: now() }
    try {
      if (!isAuthorized(request, auth)) throw new Refusal(401, 'Unauthorized', 'this dashboard needs its credential', { 'www-authenticate': 'Basic realm="Matchbox", charset="UTF-8"' })
      const url = new URL(request.url ?? '/', 'http://dashboard.invalid')
      const path = basePath !== '' && (url.pathname === basePath || url.pathname.startsWith(`${basePath}/`)) ? url.pathname.slice(basePath.length) : url.pathname
      const segments = path.split('/').filter((segment) => segment !== '').map(decodeSegment)
      if (request.method === 'GET' || request.method === 'HEAD') return await getPage(served, context, segments, url.searchParams, response)
      if (request.method === 'POST') return await post(served, context, request, segments, response)
      throw new Refusal(405, 'MethodNotAllowed', 'the dashboard answers GET and POST only', { allow: 'GET, HEAD, POST' })
    } catch (error) {
      const known = statusOf(error)
      if (known === null) options.onError?.(error)
      if (response.headersSent) return void response.end()
      const { status, tag, message } = known ?? { status: 500, tag: 'InternalError', message: 'the dashboard failed to answer this request' }
      send(response, status, errorPage(context, status === 404 ? 'Not found' : status >= 500 ? 'Something went wrong' : 'Refused', tag, message), error instanceof Refusal ? error.headers : {})
    }
  }
  return (request, response) => {
    void answer(request, response)
  }
}
