/**
 * The host's book of waiting polls: a task stored on a partition moves one poll of its family
 * that waits on another partition and may take from it, never a poll of the same partition, of
 * another family or task type, or one already moved; a family whose polls all answered holds
 * no entry. A partition whose polls wait with nothing ready moves one of them to a partition
 * of the family that has a task ready, if any, but never a poll with a task ready in another of
 * its own queues on its partition. Neither moves a poll that could not poll again (its wait is
 * up, or its caller aborted it): the move goes to the next poll that can.
 */
import { describe, expect, it } from 'vitest'
import type { PartitionKey } from '../domain/QueueKey.ts'
import { makeHostWaitingPolls } from './MatchingHostWaiting.ts'

const key = (partition: number, family = 'emails', type: 'activity' | 'workflow' = 'activity'): PartitionKey => ({ namespace: 'default', family, type, partition })

describe('MatchingHostWaiting', () => {
  it('moves one poll waiting on another partition of the family, once', () => {
    const book = makeHostWaitingPolls()
    const moved: Array<[string, number]> = []
    const poll = (name: string, partition: number, canTake = true) => ({ partition, canMove: () => true, canTakeFrom: () => canTake, moveTo: (to: number) => void moved.push([name, to]), readyHere: () => false, readyElsewhere: () => undefined })
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

  it('moves one poll of a partition whose polls wait idle to a partition with a task ready, if there is one', () => {
    const book = makeHostWaitingPolls()
    const moved: Array<[string, number]> = []
    const poll = (name: string, partition: number, ready: number | undefined, readyHere = false) => ({ partition, canMove: () => true, canTakeFrom: () => true, moveTo: (to: number) => void moved.push([name, to]), readyHere: () => readyHere, readyElsewhere: () => ready })
    book.add(key(0), poll('nothing ready elsewhere', 0, undefined))
    // Idle in one of its queues while another of them has a task ready: it stays and takes it.
    book.add(key(0), poll('a task ready in its other queue', 0, 2, true))
    book.add(key(0), poll('a', 0, 2))
    book.add(key(0), poll('b', 0, 2))
    book.add(key(0), poll('on another partition', 1, 2))
    book.add(key(0, 'other'), poll('other family', 0, 2))
    book.pollsIdle(key(0))
    expect(moved).toEqual([['a', 2]])
    book.pollsIdle(key(0))
    expect(moved).toEqual([['a', 2], ['b', 2]])
    // Left: a poll with nowhere to go, and polls of other partitions and families.
    book.pollsIdle(key(0))
    expect(moved).toHaveLength(2)
  })

  it('passes over a poll that could not poll again, and moves the next one that can', () => {
    const book = makeHostWaitingPolls()
    const moved: Array<[string, number]> = []
    const poll = (name: string, partition: number, canMove: boolean) => ({ partition, canMove: () => canMove, canTakeFrom: () => true, moveTo: (to: number) => void moved.push([name, to]), readyHere: () => false, readyElsewhere: () => 1 })
    // Registered first, as a poll of no wait that arrived first is: its wait is up at this instant.
    book.add(key(0), poll('wait up', 2, false))
    book.add(key(0), poll('time left', 0, true))
    book.taskStored(key(1))
    expect(moved).toEqual([['time left', 1]])
    book.add(key(0), poll('idle, wait up', 2, false))
    book.pollsIdle(key(2))
    expect(moved).toEqual([['time left', 1]])
    // Nobody left that can move: the task stays for the next poll.
    book.taskStored(key(1))
    expect(moved).toHaveLength(1)
  })

  it('forgets a family once its polls answered', () => {
    const book = makeHostWaitingPolls()
    const removes = [0, 1].map((partition) => book.add(key(partition), { partition, canMove: () => true, canTakeFrom: () => true, moveTo: () => {}, readyHere: () => false, readyElsewhere: () => undefined }))
    expect(book.size()).toBe(1)
    for (const remove of removes) remove()
    expect(book.size()).toBe(0)
    book.taskStored(key(0))
    expect(book.size()).toBe(0)
  })
})
