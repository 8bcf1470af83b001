-- 007_operator_controls — what the operator's controls keep:
-- - queue_pauses: a queue with a row here is paused; every claim statement of the job store
--   (claim, claimMany, claimDue, ackAndClaimDue, a claimed enqueue) checks it inside itself, so
--   no engine claims from a paused queue once the pause has committed, whichever process it runs in;
-- - attempt_errors: the errors of a job's latest attempts (a JSON array, oldest first, at most
--   the store's bound), kept on the row and carried to dead_jobs;
-- - progress: the small JSON value a handler last reported for its job;
-- - dead_jobs_by_queue_key: a search by key reads the dead jobs of one queue holding the key,
--   not every dead job of the queue.
-- `{{schema}}` is replaced by the quoted schema.
CREATE TABLE {{schema}}.queue_pauses (
  queue text COLLATE "C" PRIMARY KEY,
  paused_at_ms bigint NOT NULL
);

ALTER TABLE {{schema}}.jobs ADD COLUMN attempt_errors jsonb;
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN attempt_errors jsonb;
ALTER TABLE {{schema}}.jobs ADD COLUMN progress jsonb;
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN progress jsonb;

CREATE INDEX dead_jobs_by_queue_key ON {{schema}}.dead_jobs (queue, job_key) WHERE job_key IS NOT NULL;
