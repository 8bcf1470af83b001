/**
 * Secrets — unpredictable bytes for security tokens (the dashboard's CSRF key). Deliberately not
 * the seeded Random: a token an attacker could reproduce from a seed protects nothing, and
 * security tokens play no part in a reproducible trace.
 */
import { randomBytes } from 'node:crypto'

/** `bytes` bytes from the operating system's CSPRNG, as hex. */
export function secretHex(bytes = 32): string {
  return randomBytes(bytes).toString('hex')
}
