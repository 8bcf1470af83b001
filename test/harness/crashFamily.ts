/**
 * crashFamily — the queue family and queue settings shared by the crash recovery child
 * (matchingChild.ts) and the host that takes over after each kill (crashCycle.ts), so both
 * route the same tasks to the same physical queues.
 */

/** The queue family every crash test process uses. */
export const crashFamily = { namespace: 'crash', family: 'recovery', type: 'activity' } as const

/** Partitions of the crash family: two, so adds and polls cross partitions. */
export const crashPartitionCount = 2

/**
 * Checkpoints far more often than the upstream 1 s / 100 acks, so that ack levels move within a
 * child's short life and the recovery checks have progress to protect.
 */
export const crashQueueLimits = { checkpointIntervalMs: 50, checkpointAckCountMax: 10 } as const
