/**
 * Limits — every named bound and default in Matchbox, in one place (TigerBeetle: a limit for
 * everything). Values marked "upstream" are Temporal Matching's defaults (DESIGN.md §9); each
 * can be overridden through options where the owning component says so.
 */

/** Longest namespace, family or version name, in UTF-8 bytes; keeps keys indexable. */
export const nameBytesMax = 1000

/** Highest task priority; priorities are 0…9, higher first (a subqueue per level). */
export const priorityMax = 9

/** Default task priority when none is given. */
export const priorityDefault = 0

/** Rows returned by one backlog read (upstream 1000): bounds memory per read. */
export const readPageSizeMax = 1000

/** Tasks coalesced into one append (upstream 100): bounds one transaction's size. */
export const appendBatchSizeMax = 100

/** Adds waiting for an append before new adds fail fast as overloaded (upstream 250). */
export const appendQueueSizeMax = 250

/** Acks between checkpoints (upstream 100): bounds rows re-delivered after a crash. */
export const checkpointAckCountMax = 100

/** Time between checkpoints while acks are pending (upstream 1 s). */
export const checkpointIntervalMs = 1_000

/** An owned queue with no activity for this long unloads itself (upstream 5 min). */
export const idleUnloadMs = 5 * 60_000

/** How long an arriving task waits for a poller before it is spooled (upstream 200 ms). */
export const syncMatchWaitMs = 200

/** Delay before unloading a partition that membership moved away (upstream 500 ms). */
export const membershipUnloadDelayMs = 500

/** First retry delay after a failed acquire (upstream 1 s). */
export const acquireRetryInitialMs = 1_000

/** Longest retry delay after failed acquires (upstream 10 s). */
export const acquireRetryMaxMs = 10_000

/** Partitions per queue family when none is configured (upstream 4). */
export const partitionCountDefault = 4

/** Messages a partition actor's mailbox holds before senders wait: bounds memory per partition. */
export const partitionMailboxSizeMax = 1_024

/** Tasks one relocate call moves: bounds one transaction, like an append batch. */
export const relocateBatchSizeMax = 1_000

/** Largest serialized task payload or user-data document, in bytes (1 MiB). */
export const payloadBytesMax = 1 << 20

/** First delay before re-dispatching a task whose start History failed retryably. */
export const historyRetryInitialMs = 100

/** Longest delay between re-dispatches of a task History keeps failing: bounds added latency. */
export const historyRetryMaxMs = 10_000

/**
 * Time between a host's membership heartbeats (dynamic membership). Each beat renews the host's
 * row and re-reads the live hosts, so it also bounds how stale a host's view can be.
 */
export const membershipHeartbeatIntervalMs = 1_000

/**
 * How long a host row stays live after its last heartbeat: five intervals, so a host survives
 * four missed or slow beats (a GC pause, a store hiccup) before others take its partitions, and
 * a crashed host's partitions move within about five seconds.
 */
export const membershipHostTtlMs = 5_000
