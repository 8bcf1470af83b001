/**
 * Schema — the name of the PostgreSQL schema that holds Matchbox's tables, validated once and
 * quoted for interpolation.
 *
 * Invariant: the quoted schema identifier is the ONLY text ever interpolated into SQL; every
 * value travels as a parameter. The pattern admits lowercase identifiers PostgreSQL accepts
 * unquoted (≤ 63 bytes), so quoting changes nothing about which schema is meant.
 */
import { InvalidInput } from '../../domain/errors.ts'

/** The schema used when none is given. */
export const schemaDefault = 'matchbox'

const schemaPattern = /^[a-z_][a-z0-9_]{0,62}$/

/** A validated schema: its name, and the quoted identifier to interpolate. */
export interface Schema {
  readonly name: string
  /** `"name"`, ready for `"name".task_queues`. */
  readonly quoted: string
}

/** Validates a schema name; throws `InvalidInput` naming `schema` (a configuration mistake). */
export function makeSchema(name: string = schemaDefault): Schema {
  if (typeof name !== 'string' || !schemaPattern.test(name)) {
    throw new InvalidInput({ field: 'schema', reason: `${JSON.stringify(name)} is not a schema name: it must match ${schemaPattern}` })
  }
  return { name, quoted: `"${name}"` }
}
