/**
 * Security — who may see the dashboard and who may act through it: HTTP basic auth compared in
 * constant time, the CSRF token every form carries, and a same-origin check on every POST.
 *
 * Invariants: credentials and tokens are compared with `timingSafeEqual` over SHA-256 digests
 * (equal lengths, so neither the length nor a common prefix leaks through timing); the CSRF
 * token is an HMAC of the handler's secret, so it is stable across requests of one handler and
 * unguessable without the secret; a POST whose Origin (or Referer) names another host is refused
 * even with the token.
 *
 * Does not: keep sessions or users (one operator credential, as the peers' dashboards do), or
 * serve TLS — put the dashboard behind a TLS proxy or bind it to loopback (the default).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { InvalidInput } from '../domain/errors.ts'

/** One operator credential. */
export interface BasicAuth {
  readonly user: string
  readonly password: string
}

/** Reads `user:password` (the `--basic-auth` form); `InvalidInput` when either half is empty. */
export function parseBasicAuth(text: string): BasicAuth {
  const colon = text.indexOf(':')
  if (colon <= 0 || colon === text.length - 1) throw new InvalidInput({ field: 'basicAuth', reason: 'must be user:password with neither empty' })
  return { user: text.slice(0, colon), password: text.slice(colon + 1) }
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** Equality of two strings in time that depends on neither their contents nor their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b))
}

/** True when `request` carries `auth` as its basic credentials (always true without `auth`). */
export function isAuthorized(request: IncomingMessage, auth: BasicAuth | null): boolean {
  if (auth === null) return true
  const header = request.headers.authorization ?? ''
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
  const given = match === null ? '' : Buffer.from(match[1] as string, 'base64').toString('utf8')
  // Both halves compared whole, so a wrong user costs the same time as a wrong password.
  return constantTimeEqual(given, `${auth.user}:${auth.password}`)
}

/** The CSRF token of a handler whose secret is `secret`. */
export function csrfTokenOf(secret: string): string {
  return createHmac('sha256', secret).update('matchbox-dashboard-csrf').digest('base64url')
}

/** True when `given` is the handler's token. */
export function isCsrfToken(given: string | null, token: string): boolean {
  return given !== null && constantTimeEqual(given, token)
}

/**
 * True when a POST comes from a page of this same host: its Origin (else Referer) names the Host
 * it was sent to. A request with neither (a command-line client) passes; the token still binds it.
 */
export function isSameOrigin(request: IncomingMessage): boolean {
  const host = request.headers.host
  const source = request.headers.origin ?? request.headers.referer
  if (source === undefined) return true
  if (host === undefined || source === 'null') return false
  try {
    return new URL(source).host === host
  } catch {
    return false
  }
}
