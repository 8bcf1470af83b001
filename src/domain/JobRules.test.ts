import { describe, expect, it } from 'vitest'
import {
  claimRefusal,
  deadReasonExhausted,
  deadReasonExpired,
  isClaimable,
  isClaimLive,
  isExhausted,
  isExpired,
  isRetentionOver,
  isValidClaim,
  type JobRuleFields,
  sweptDeath,
} from './JobRules.ts'

const pending: JobRuleFields = { state: 'pending', attempts: 0, maxAttempts: 2, runAtMs: 1_000, expiresAtMs: null, deadlineMs: null, claimToken: null }
const claimed = (overrides: Partial<JobRuleFields> = {}): JobRuleFields => ({ ...pending, state: 'processing', attempts: 1, deadlineMs: 5_000, claimToken: 't', ...overrides })

describe('JobRules', () => {
  it('pins the contract’s dead reasons', () => {
    expect([deadReasonExhausted, deadReasonExpired]).toEqual(['max attempts exceeded', 'expired'])
  })

  it('a pending job is claimable from runAt on, until it expires or its budget is used', () => {
    expect(isClaimable(pending, 999)).toBe(false)
    expect(isClaimable(pending, 1_000)).toBe(true)
    expect(isClaimable({ ...pending, expiresAtMs: 3_000 }, 2_999)).toBe(true)
    expect(isClaimable({ ...pending, expiresAtMs: 3_000 }, 3_000)).toBe(false)
    expect(isClaimable({ ...pending, attempts: 2 }, 2_000)).toBe(false)
    expect(isClaimable({ ...pending, state: 'dead' }, 2_000)).toBe(false)
  })

  it('a claim is valid strictly before its deadline; at the deadline it has lapsed and can be reclaimed', () => {
    const job = claimed()
    expect(isValidClaim(job, 't', 4_999)).toBe(true)
    expect(isValidClaim(job, 'other', 4_999)).toBe(false)
    expect(isValidClaim(job, 't', 5_000)).toBe(false)
    expect(isClaimLive(job, 4_999)).toBe(true)
    expect(isClaimLive(job, 5_000)).toBe(false)
    expect(isClaimable(job, 4_999)).toBe(false)
    expect(isClaimable(job, 5_000)).toBe(true)
  })

  it('a lapsed claim at its budget is exhausted from its deadline on, unless it expired by then', () => {
    const atBudget = claimed({ attempts: 2 })
    expect(isExhausted(atBudget, 4_999)).toBe(false)
    expect(isExhausted(atBudget, 5_000)).toBe(true)
    expect(isClaimable(atBudget, 5_000)).toBe(false)
    expect(isExhausted(claimed(), 5_000)).toBe(false)
    expect(isExhausted({ ...atBudget, expiresAtMs: 5_001 }, 5_000)).toBe(true)
    expect(isExhausted({ ...atBudget, expiresAtMs: 5_000 }, 5_000)).toBe(false)
    expect(isExhausted({ ...atBudget, expiresAtMs: 4_000 }, 9_000)).toBe(false)
  })

  it('a sweep kills an exhausted job at its deadline and any other expired job now', () => {
    expect(sweptDeath(claimed({ attempts: 2, expiresAtMs: 8_000 }), 8_000)).toEqual({ reason: deadReasonExhausted, diedAtMs: 5_000 })
    expect(sweptDeath(claimed({ attempts: 2, expiresAtMs: 5_000 }), 8_000)).toEqual({ reason: deadReasonExpired, diedAtMs: 8_000 })
    expect(sweptDeath(claimed({ expiresAtMs: 8_000 }), 8_000)).toEqual({ reason: deadReasonExpired, diedAtMs: 8_000 })
    expect(sweptDeath({ ...pending, expiresAtMs: 8_000 }, 9_000)).toEqual({ reason: deadReasonExpired, diedAtMs: 9_000 })
  })

  it('a refused claim says why: a live claim, an expiry at or before now, or not yet due', () => {
    expect(claimRefusal(claimed(), 4_999)).toBe('already-started')
    expect(claimRefusal(claimed({ expiresAtMs: 4_000 }), 4_999)).toBe('already-started')
    expect(claimRefusal(claimed({ expiresAtMs: 5_000 }), 5_000)).toBe('expired')
    expect(claimRefusal({ ...pending, expiresAtMs: 900 }, 900)).toBe('expired')
    expect(claimRefusal({ ...pending, expiresAtMs: 900 }, 899)).toBe('not-due')
    expect(isExpired({ expiresAtMs: null }, Number.MAX_SAFE_INTEGER)).toBe(false)
  })

  it('retention is over at diedAt + retention; null retention keeps a dead job forever', () => {
    expect(isRetentionOver({ diedAtMs: 1_000, deadLetterRetentionMs: 500 }, 1_499)).toBe(false)
    expect(isRetentionOver({ diedAtMs: 1_000, deadLetterRetentionMs: 500 }, 1_500)).toBe(true)
    expect(isRetentionOver({ diedAtMs: 1_000, deadLetterRetentionMs: 0 }, 1_000)).toBe(true)
    expect(isRetentionOver({ diedAtMs: 1_000, deadLetterRetentionMs: null }, Number.MAX_SAFE_INTEGER)).toBe(false)
  })
})
