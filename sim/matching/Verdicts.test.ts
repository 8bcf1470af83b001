/**
 * Verdicts: every sentence shape Checkers.ts and OwnershipLossChecker.ts write is sorted to its checker, unknown ones to
 * `other`, and a batch's verdicts name the count and the first failing seed.
 */
import { describe, expect, it } from 'vitest'
import { checkerOf, Verdicts } from './Verdicts.ts'

const q = 'default/emails/activity/2'

describe('Verdicts', () => {
  it.each([
    [`${q}: acquire returned range 3, not above 3`, 'fencing'],
    [`${q}: range 4 appended after range 5 was acquired`, 'fencing'],
    [`${q}: range 4 checkpointed after range 5 was acquired`, 'fencing'],
    [`${q}: range 4 relocated from after range 5 was acquired`, 'fencing'],
    [`${q}: range 6 relocated into but no acquire ever returned it (current 5)`, 'fencing'],
    [`${q}: range 4 checkpoint was refused for its range, yet deleted the rows of job-1`, 'fencing'],
    [`${q}#7: task id allocated twice (range 2)`, 'id uniqueness'],
    [`${q} subqueue 0: ack level moved backwards from 5 to 3`, 'ack safety'],
    [`${q}: range 2 checkpoint deleted the row of job-9, whose delivery was never handled`, 'ack safety'],
    [`${q} subqueue 0: range 2 checkpoint asked for ack level 4 but 5 was saved, past the handled prefix`, 'ack safety'],
    [`${q} subqueue 3: range 2 checkpoint deleted row #8 (job-8) above the ack level it asked for (7)`, 'ack safety'],
    [`host-1.0 ${q}#2: instance attempted append under range 4 12 ms after its checkpoint was answered OwnershipLost`, 'ownership loss'],
    [`host-1.0 ${q}: re-acquired 0 ms after it heard OwnershipLost, skipping the restart back-off (at least 1000 ms)`, 'ownership loss'],
    [`relocate ${q}@v1 (r3) → ${q} (r5) lost the row of job-4: it left the source but never arrived`, 'relocation'],
    [`relocate ${q}@v1 (r3) → ${q} (r5) duplicated the row of job-4: 2 rows arrived for 1 moved`, 'relocation'],
    [`relocate ${q}@v1 (r3) → ${q} (r5) left row #4 (job-4) in the source though it was asked to move it`, 'relocation'],
    [`relocate ${q}@v1 (r3) → ${q} (r5) removed row #9 (job-9) it was not asked to move`, 'relocation'],
    [`relocate ${q}@v1 (r3) → ${q} (r5) added a row of job-9 that it did not move`, 'relocation'],
    [`relocate ${q}@v1 (r3) → ${q} (r5) reported 2 rows moved, but 1 asked-for rows were stored`, 'relocation'],
    ['user data default/emails: update expecting the current version 2 was refused', 'user data'],
    ['user data default/emails: update expecting 1 committed as 3 while the version was 2', 'user data'],
    [`task ${q} job-7 never delivered`, 'at-least-once'],
    ['… and 4 more tasks never delivered', 'at-least-once'],
    ['task job-99 started but never added', 'at-least-once'],
    ['defect on host-1 in default/emails/activity/2: Error: boom', 'other'],
    ['2 hosts never finished closing', 'other'],
  ])('%s → %s', (violation, checker) => {
    expect(checkerOf(violation)).toBe(checker)
  })

  it('counts violations per checker and remembers the first failing seed', () => {
    const verdicts = new Verdicts()
    const report = { accepted: 3, delivered: 2, lost: ['job-3'], duplicated: 1, unexpected: [], recovered: 1 }
    verdicts.add(7, [`task ${q} job-3 never delivered`], report)
    verdicts.add(8, [`task ${q} job-4 never delivered`], report)
    expect(verdicts.verdict('at-least-once')).toBe('FAIL (2 violations, first on seed 7)')
    expect(verdicts.verdict('fencing')).toBe('pass')
    expect(verdicts.deliveries).toEqual({ accepted: 6, delivered: 4, lost: 2, duplicated: 2, unexpected: 0, recovered: 2 })
  })
})
