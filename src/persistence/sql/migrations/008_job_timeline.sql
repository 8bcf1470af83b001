-- 008_job_timeline — what a job's timeline needs beyond its attempt errors:
-- - claim_history: the latest claims of the job (a JSON array of {attempt, atMs}, oldest first,
--   at most the store's bound), appended by every claim, taken back by `release`, kept on the
--   row and carried to dead_jobs and back by a retry of a dead job, which appends attempt 0;
-- - progress_at_ms: when the handler last reported progress (beside `progress`).
-- A retried attempt's error also records the time its next attempt is due (`retryAtMs` in its
-- `attempt_errors` entry), which needs no column.
-- `{{schema}}` is replaced by the quoted schema.
ALTER TABLE {{schema}}.jobs ADD COLUMN claim_history jsonb;
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN claim_history jsonb;
ALTER TABLE {{schema}}.jobs ADD COLUMN progress_at_ms bigint;
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN progress_at_ms bigint;
