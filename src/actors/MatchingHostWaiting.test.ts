/**
 * The host's book of waiting polls: a task stored on a partition moves one poll of its family
 * that waits on another partition and may take from it, never a poll of the same partition, of
 * another family or task type, or one already moved; a family whose polls all answered holds
 * no entry.
 */
import { describe, expect, it } from 'vitest'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { makeHostWaitingPolls } from './MatchingHostWaiting.ts'

const key = (partition: number, family = 'emails', type: 'activity' | 'workflow' = 'activity'): PartitionKey => ({ namespace: 'default', family, type, partition })

describe('MatchingHostWaiting', () => {
  it('moves one poll waiting on another partition of the family, once', () => {
    const book = makeHostWaitingPolls()
    const moved: Array<[string, number]> = []
    const poll = (name: string, partition: number, canTake = true) => ({ partition, canTakeFrom: () => canTake, moveTo: (to: number) => void moved.push([name, to]) })
    book.add(key(0), poll('same', 1))
    book.add(key(0), poll('cannot', 2, false))
    book.add(key(0, 'other'), poll('other family', 3))
    book.add(key(0, 'emails', 'workflow'), poll('other type', 3))
    book.add(key(0), poll('a', 3))
    book.add(key(0), poll('b', 0))
    book.taskStored(key(1))
    expect(moved).toEqual([['a', 1]])
    book.taskStored(key(1))
    expect(moved).toEqual([['a', 1], ['b', 1]])
    // Only the poll on partition 1 itself and the one that cannot take from it are left.
    book.taskStored(key(1))
    expect(moved).toHaveLength(2)
  })

  it('forgets a family once its polls answered', () => {
    const book = makeHostWaitingPolls()
    const removes = [0, 1].map((partition) => book.add(key(partition), { partition, canTakeFrom: () => true, moveTo: () => {} }))
    expect(book.size()).toBe(1)
    for (const remove of removes) remove()
    expect(book.size()).toBe(0)
    book.taskStored(key(0))
    expect(book.size()).toBe(0)
  })
})
