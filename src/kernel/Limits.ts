/**
 * Limits — every named bound and default in Matchbox, in one place (TigerBeetle: a limit for
 * everything). Values marked "upstream" are Temporal Matching's defaults (DESIGN.md §9); each
 * can be overridden through options where the owning component says so.
 *
 * Length: past 400 lines because every bound lives here, each with the reason for its value.
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

/** Delay before unloading a partition that membership moved away (upstream 500 ms). */
export const membershipUnloadDelayMs = 500

/**
 * How long a claim straight from the job store waits for its partition's default queue to load
 * (and acquire its range, the claim's fence) before it claims nothing this turn.
 */
export const fenceLoadWaitMs = 1_000

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

/**
 * Deepest nesting of arrays and objects in a payload or user-data document: 64. Real documents
 * nest a handful of levels; every layer that walks a document recursively (validation, the
 * memory store's copy, PGlite, which already fails a 5,000-level document) stays far from its
 * stack limit, and a hostile 10,000-level value is refused instead of overflowing one.
 */
export const payloadDepthMax = 64

/**
 * How long opening a PostgreSQL connection may take (TCP, TLS, startup, authentication), and how
 * long a statement waits for a free pooled connection: 10 s. A reachable server answers in
 * milliseconds; one that accepts TCP and never answers (a hung host, a half-dead proxy) would
 * otherwise hold the caller for as long as the operating system keeps the socket open.
 */
export const pgConnectTimeoutMs = 10_000

/**
 * Longest a statement may run before PostgreSQL cancels it (`statement_timeout`): 30 s. Matchbox's
 * statements are short and indexed and take milliseconds; one running this long waits on a lock
 * or a sick server, and failing it as `Unavailable` hands the decision to retry to the caller.
 */
export const pgStatementTimeoutMs = 30_000

/**
 * How long past the statement timeout the client still waits for the server's answer before it
 * gives up on the connection: 5 s, or the statement timeout itself when that is shorter. The server
 * normally cancels first and the connection stays usable; this bound catches a server that went
 * silent mid-statement, which no server-side timeout can.
 */
export const pgStatementGraceMs = 5_000

/** Largest timeout a driver option may name, in ms: Node's timers cannot wait longer (about 24.8 days). */
export const timerDelayMsMax = 2_147_483_647

/**
 * Attempts to take an embedded data directory's lock file before giving up: 3. An attempt ends
 * without an answer only when a stale lock had to be removed first or its holder released it
 * meanwhile, which happens once; a third such attempt means something keeps rewriting the file.
 */
export const dataDirLockAttemptsMax = 3

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

/**
 * Partition owners a membership view remembers before starting over: every queue's partitions
 * an engine routes (polls, adds, forwarded claims) hit it; 10,000 covers thousands of queues.
 */
export const ownerCacheEntriesMax = 10_000

/**
 * Queue families (per task type) a Matching host keeps validated, named partition keys for
 * before starting over: every add and poll routes through them. Sized like the owner cache.
 */
export const routedFamiliesMax = 10_000

/**
 * Names (namespaces, families, versions) whose percent-encoding a process remembers before
 * starting over: keys are encoded on every store call and route, from a handful of names.
 */
export const encodedNamesMax = 10_000

/**
 * Distinct statement texts the PostgreSQL driver runs as named prepared statements (one parse
 * and plan per connection, then bind and execute). Matchbox's SQL is a fixed set of a few dozen
 * texts per schema; the bound keeps a connection's prepared statements finite whatever happens.
 */
export const preparedStatementsMax = 500

// ---------------------------------------------------------------- jobs

/** Default visibility timeout of a claim, seconds. */
export const visibilityTimeoutSDefault = 300

/** Default attempt budget of a job: every claim, fresh or reclaim, counts. */
export const maxAttemptsDefault = 3

/** Default base of the retry curve, seconds. */
export const backoffBaseSDefault = 5

/** Outbox queues' fixed visibility timeout, seconds. */
export const outboxVisibilityTimeoutS = 60

/** Outbox queues' fixed attempt budget. */
export const outboxMaxAttempts = 5

/** Outbox queues' fixed retry-curve base, seconds. */
export const outboxBackoffBaseS = 5

/**
 * Longest duration a job option may name (visibility, backoff base, retention, retry delay,
 * heartbeat extension), seconds: ten years. Keeps every deadline a safe integer of ms and
 * catches unit mistakes (milliseconds passed as seconds).
 */
export const jobDurationSMax = 10 * 365 * 24 * 60 * 60

/** Largest attempt budget: far beyond any sane retry policy, small enough to catch a unit mistake. */
export const jobMaxAttemptsMax = 10_000

/** Longest error text kept on a dead job, in characters; longer handler errors are truncated. */
export const jobErrorLengthMax = 10_000

/** Longest handler stack kept on a job, in characters: the frames that locate a failure, not a log. */
export const jobErrorStackLengthMax = 8_000

/**
 * Handler errors a job keeps, one per attempt that recorded one (`retry`, `fail`, a throw in
 * `work`), the oldest dropped first: enough to see whether a job fails the same way every time or
 * differently, while a row stays bounded (each entry is capped as the last error is).
 */
export const jobAttemptErrorsKept = 10

/**
 * Claims a job keeps (attempt and time, for its timeline), the oldest dropped first: as many as
 * attempt errors, so every kept error has its claim beside it; about 40 bytes each.
 */
export const jobClaimsKept = 10

/**
 * Bytes of a job's progress value as JSON text: a counter, a fraction, a short status — what a
 * page shows beside the job, not a log or a result store.
 */
export const jobProgressBytesMax = 4_096

/** Jobs one `list` page may return: bounds one statement and one screen of `matchbox jobs list`. */
export const jobListLimitMax = 1_000

/** Claims one `ackBatch` call may name: bounds one statement, like an append batch. */
export const ackBatchSizeMax = 1_000

/**
 * Jobs one `enqueueMany` call may insert: one statement whose arrays stay a few MB for ordinary
 * payloads, and a batch a caller's transaction holds its locks for only briefly. Larger imports
 * go in several calls.
 */
export const enqueueBatchSizeMax = 1_000

/**
 * Serialized payload bytes one `enqueueMany` call may carry in all (16 MiB): one statement's
 * parameters stay far below PostgreSQL's 1 GB message limit, and a batch of large payloads is
 * refused up front rather than held whole in memory on both sides of the connection.
 */
export const enqueueBatchBytesMax = 16 << 20

/**
 * How long a due job's delivery is reserved before it is offered again: the due-time driver
 * pushes the job's due time this far forward BEFORE adding its Matching task, so a crash or a
 * failed add between the two only delays the job by this much (and may duplicate its task,
 * which History answers as obsolete); never strands it.
 */
export const jobDeliveryRetryMs = 30_000

/**
 * When Matching refused a job's task outright (nothing written: a queue waiting out a restart
 * delay, a host that owns no partition), the job is due again after this, not after the whole
 * reservation; long enough that a refusing queue is not hammered, short next to a claim's wait.
 */
export const jobDeliveryRefusedRetryMs = 1_000

/** Due jobs handed to Matching per driver round: one append batch (upstream 100). */
export const jobDeliveryBatchMax = 100

/**
 * Reservations a due-time driver keeps in memory to give back once the store answers again,
 * when giving them back failed too (the store went down mid-pass): ten delivery batches. Past
 * it, the rest wait out their reservation (`jobDeliveryRetryMs`), as after a crash.
 */
export const jobDeliveryUnreleasedMax = 1_000

/**
 * Period of the due-time driver's safety scan: bounds how late a job written by another
 * connection (a `tx` enqueue that committed later, another host) is noticed when no claim
 * looks for it.
 */
export const jobDueScanIntervalMs = 1_000

/**
 * How long a job claimed for a claimant that left is kept for the next claim of its queue on the
 * same engine (it saves a release and a claim) before a due-time pass gives it back to the store:
 * at most this, and at most half the time its claim has left, so a short visibility timeout never
 * lapses a claim nobody holds. Well below the simulator's prompt-delivery bound (250 ms).
 */
export const jobKeptHoldMs = 100

/**
 * How long a claim that saw a deliverable job waits for Matching to hand a task over: the task
 * is already in the backlog, so this is only reached when another claimer took the job.
 */
export const claimPollWaitMs = 5_000

/** Pause before a claim looks again after Matching handed nothing over (a lost race, a restarting queue). */
export const claimRetryDelayMs = 100

/**
 * First back-off step after a store failure (a worker's claim loop, the due-time driver): short,
 * so a single dropped connection costs little.
 */
export const outageRetryInitialMs = 50

/**
 * Cap of the store-outage back-off: the steps double from `outageRetryInitialMs` to this and
 * stay, with equal jitter ([cap/2, cap]). One second keeps a down store to about one attempt a
 * second per worker and driver, and lets work resume within a second of the store coming back.
 */
export const outageRetryMaxMs = 1_000

/** A worker heartbeats every visibility timeout / this: two beats may fail before the claim lapses. */
export const workerHeartbeatDivisor = 3

/** How long a schedules lease lasts without renewal: a crashed leader's schedules resume within this. */
export const scheduleLeaseTtlMs = 30_000

/** Occurrences of one schedule enqueued per `runSchedules` call: bounds one transaction after a long outage. */
export const scheduleCatchUpMax = 100

/**
 * How often an owned queue re-reads its metadata to learn whether another owner took its range
 * (upstream's UpdateAckInterval, 1 min). A queue that never writes would otherwise never find
 * out, and rows the new owner appended before unloading would wait for an idle unload that a
 * steady stream of polls never lets happen.
 */
export const ownershipCheckIntervalMs = 60_000

/**
 * How long an idle worker's claim waits before it looks again on its own: deliveries wake it at
 * once, so this only bounds how stale its view is of rows it was not told about.
 */
export const workerClaimWaitMs = 1_000

/**
 * How long a queue's dispatch (jobs/Dispatch.ts) holds nothing — no claim, kept job, line poll,
 * forwarded or lazy poll — before a due-time pass drops it. A queue claimed from at least once a
 * minute (a `claim()` poller, a periodic producer's consumer) keeps its dispatch and the mark that
 * its store is drained, which spares each claim a statement; a queue that went quiet costs its
 * engine's passes nothing a minute later.
 */
export const dispatchIdleUnloadMs = 60_000

/** Longest `claim({ waitMs })`: ten minutes, as Matching's longest poll. */
export const claimWaitMsMax = 10 * 60_000

/** Most handlers one `work` call runs at once: bounds the loops and polls of one worker. */
export const workerConcurrencyMax = 1_000

/** First wait before re-opening a lost LISTEN connection; short, since messages are lost meanwhile. */
export const busRelistenInitialMs = 100

/** Longest wait between attempts to re-open a LISTEN connection (a database that is down). */
export const busRelistenMaxMs = 5_000

/**
 * Bus messages sent together in one `pg_notify` statement at most: a turn's hand-overs and
 * forwarded polls share a round trip; 64 messages of up to ~8 kB each stay well inside what one
 * statement and PostgreSQL's notification queue take at once.
 */
export const busNotifyBatchMax = 64

/**
 * How much longer a forwarded poll waits for its answer than the owner's own poll wait: the
 * owner answers when its poll ends, and the answer needs a NOTIFY round trip to arrive.
 */
export const forwardedPollGraceMs = 1_000

/**
 * Forwarded polls an engine serves at once for other engines; past it a forwarded poll is
 * refused at once (the poller asks again), so a flood of pollers cannot grow memory unbounded.
 */
export const forwardedPollsMax = 1_000

/** Matching partitions of a job queue unless the queue says otherwise: one keeps the strict claim order. */
export const jobQueuePartitionsDefault = 1

/** Most Matching partitions a job queue may have. */
export const jobQueuePartitionsMax = 64

/** Queue names one due-time scan reads from the store (engines that deliver only the queues they own). */
export const dueQueuesPerScanMax = 1_000

/**
 * Claims (History's recordTaskStarted) or acks one batch carries to the store. Large enough that
 * a busy engine's deliveries of one turn travel together; small enough that one statement stays
 * short (its arrays are parameters, not SQL text).
 */
export const jobBatchSizeMax = 256

/**
 * Batches of claims, or of acks, at the store at once per engine. Two keep the connection busy
 * while the next batch gathers; more would only make batches smaller.
 */
export const jobBatchesInFlightMax = 2

/**
 * Several-job claims one `work({ batch })` worker has at the store at once (LocalQueue.ts). Two
 * let the server claim the next jobs while this process decodes and runs the last ones; each
 * waits for room of half the worker's batch (or an empty local queue), so more would only make
 * statements smaller.
 */
export const localClaimsInFlightMax = 2

/**
 * Jobs one job store enqueues before it refreshes PostgreSQL's planner statistics of its jobs
 * table (`ANALYZE`); the count doubles after each refresh up to `jobStatsRefreshRowsMax`. A
 * backlog enqueued into a table the statistics still call empty would otherwise be claimed
 * through plans that read the whole queue per claim, until autovacuum's next analyze (a minute
 * or more; never, on the embedded store).
 */
export const jobStatsRefreshRowsFirst = 1_000

/** The largest gap, in inserted rows, between two statistics refreshes of one job store. */
export const jobStatsRefreshRowsMax = 100_000

/**
 * Jobs of one queue and state the dashboard counts exactly; past it the page shows "N+" (a
 * lower bound, labelled). Counting walks an index up to this many entries, so the queues page
 * costs a bounded read per queue however large the queue grows — never a count over the table.
 */
export const dashboardCountCap = 10_000

/** Fairness keys a queue's pending tab lists (those with the most pending jobs). */
export const dashboardFairnessKeysMax = 20

/** Queues the dashboard's queues page lists (the first ones by name). */
export const dashboardQueuesMax = 200

/** Jobs on one page of the dashboard's jobs list. */
export const dashboardPageSize = 50

/** Jobs one dashboard action touches (a selection, or "all dead jobs of a queue" per click). */
export const dashboardActionJobsMax = 1_000

/** Bytes of a request body the dashboard reads (forms, a pasted simulator failure file); more is refused with 413. */
export const dashboardBodyBytesMax = 1_048_576

/** Simulator replays the dashboard keeps in memory for their timeline pages (the oldest goes first). */
export const dashboardReplaysKept = 8

/**
 * Queues a SQL job store remembers as having concurrency keys, whose claims it runs under the
 * key guard from the first (SqlJobClaims.ts's keyed queues): ten thousand queue names is a few
 * hundred KiB; past it the store forgets them all and learns each again at one extra round trip.
 */
export const keyedQueuesKnownMax = 10_000

/**
 * Queues a SQL job store remembers as having rows whose task is with Matching or lapsed claims,
 * whose riding claims it runs in the full head form until one reads none (SqlJobClaims.ts's
 * rare-head queues); past it the store forgets them all, and a forgotten queue that still has
 * such rows costs one more round trip to be learnt again.
 */
export const rareHeadQueuesKnownMax = 10_000

/**
 * How long a claim's registration as a waiter lasts (HandOvers.ts): a worker loop that waits idle
 * claim after claim keeps one registration, renewed once it has less than a claim's wait left,
 * so an idle loop costs about one statement per this long rather than two per claim.
 */
export const waiterLeaseMs = 30_000

/**
 * Most waiter tokens one registration writes (HandOvers.ts): an engine registers as many as its
 * claims of the queue waiting at once, so a stream of hand-overs costs one registration per that
 * many jobs rather than one each.
 */
export const waiterTokensMax = 64
