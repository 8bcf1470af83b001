-- 006_job_release — the claim order key a claim displaced, kept on the row while it is claimed,
-- so that `release` (a claim given back, its poll or worker gone) puts the job back in the
-- place it had: the due time and the ready order before the claim. Every claim statement sets
-- both (the due time only when it had arrived: one still ahead was a reservation while the
-- job's task was with Matching); a row with no due time kept is given back due now, and a row
-- claimed before this migration keeps its claim's ready order. `{{schema}}` is replaced by the quoted schema.
ALTER TABLE {{schema}}.jobs ADD COLUMN unclaimed_due_ms bigint;
ALTER TABLE {{schema}}.jobs ADD COLUMN unclaimed_ready_seq bigint;
