-- 009_job_claim_indexes — the jobs indexes laid out for the claim. A claim changes a row's
-- state, due time and ready order, so PostgreSQL cannot make it a HOT update; it writes the
-- new version into every index whose predicate the new version meets. Before this migration
-- that was four (the primary key, jobs_due, jobs_claim_head and jobs_by_queue_state_id, each of
-- which held every row with a due time or every row at all); after it, two: the primary key and
-- the small index of processing rows. A pending row's indexes (its due time, its place in the
-- claim head, its place in id order) hold pending rows only, so a claimed row leaves them and
-- gets no new entry there; everything that reads processing rows (lapsed claims by due time,
-- counts and pages of processing jobs) reads jobs_processing, which holds only what is in
-- flight. The statements of persistence/jobs/sql/jobSql.ts read pending and processing rows
-- each through its own branch so that the planner uses these partial indexes.
--
-- The indexes after it, and what each is for:
-- - jobs_pkey (id): every transition by id (claim, ack, heartbeat, retry, release, getJob);
-- - jobs_pending_due (due_ms) WHERE pending with a due time: the due-time driver's scan of every
--   queue and its next due time;
-- - jobs_pending_head (queue, priority DESC, due_ms, ready_seq) WHERE pending with a due time:
--   the head of one queue's pending rows in claim order (claimDue, ackAndClaimDue, takeDue for
--   named queues);
-- - jobs_pending_by_id (queue, id) WHERE pending: counts and keyset pages of pending jobs, and
--   the queues that have any;
-- - jobs_processing (queue, due_ms) WHERE processing: lapsed claims by due time (claimDue's and
--   the driver's), counts and pages of processing jobs;
-- - jobs_by_queue (queue, state) WHERE due_ms IS NULL (003): rows whose task is with Matching;
-- - jobs_expiring (queue, expires_at_ms) WHERE expires_at_ms IS NOT NULL (003): the expiry sweep;
-- - jobs_live_key UNIQUE (queue, job_key) WHERE job_key IS NOT NULL (004): one live job per key.
--
-- Dropping and building indexes locks the table for the length of the build, once, at upgrade.
-- `{{schema}}` is replaced by the quoted schema.
DROP INDEX {{schema}}.jobs_due;
DROP INDEX {{schema}}.jobs_claim_head;
DROP INDEX {{schema}}.jobs_by_queue_state_id;
CREATE INDEX jobs_pending_due ON {{schema}}.jobs (due_ms) WHERE due_ms IS NOT NULL AND state = 'pending';
CREATE INDEX jobs_pending_head ON {{schema}}.jobs (queue, priority DESC, due_ms, ready_seq) WHERE due_ms IS NOT NULL AND state = 'pending';
CREATE INDEX jobs_pending_by_id ON {{schema}}.jobs (queue, id) WHERE state = 'pending';
CREATE INDEX jobs_processing ON {{schema}}.jobs (queue, due_ms) WHERE state = 'processing';
