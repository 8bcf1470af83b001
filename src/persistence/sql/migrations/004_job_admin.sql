-- 004_job_admin — what a service author needs beside the job lifecycle: idempotent enqueue by
-- key, the handler's last error on live and dead jobs, cron time zones, and indexes for the
-- per-queue counts and lists. `{{schema}}` is replaced by the quoted schema.

-- An optional key per job. At most one live (pending or processing) job per queue holds a key;
-- dead rows keep theirs for inspection, so a key is free again once its job is acked,
-- cancelled or dead.
ALTER TABLE {{schema}}.jobs ADD COLUMN job_key text COLLATE "C";
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN job_key text COLLATE "C";
CREATE UNIQUE INDEX jobs_live_key ON {{schema}}.jobs (queue, job_key) WHERE job_key IS NOT NULL;

-- The error of the latest retry or fail (message, and the stack capped by the engine): kept
-- while the job waits for its next attempt, and carried into dead_jobs, where `last_error`
-- may say "max attempts exceeded" or "expired" instead.
ALTER TABLE {{schema}}.jobs ADD COLUMN last_handler_error text;
ALTER TABLE {{schema}}.jobs ADD COLUMN last_handler_stack text;
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN last_handler_error text;
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN last_handler_stack text;

-- The IANA time zone a cron schedule's fields are read in; null = UTC.
ALTER TABLE {{schema}}.job_schedules ADD COLUMN timezone text;

-- Counts by state and keyset pages by id, per queue.
CREATE INDEX jobs_by_queue_state_id ON {{schema}}.jobs (queue, state, id);
CREATE INDEX dead_jobs_by_queue_id ON {{schema}}.dead_jobs (queue, id);
