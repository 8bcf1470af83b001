-- 010_fairness — weighted fairness keys. A job enqueued with a fairness key gets a pass (its
-- place in stride scheduling, in the queue's due-time units): pass = max(V, last pass of its key
-- + stride), stride = max(1, floor(1000 / weight)), V the claim order key of the head of the
-- queue's pending rows at its priority (the queue's "virtual now"), so an idle key re-enters at
-- the head and cannot bank credit. A job's claim order key within its priority is
-- GREATEST(fair_pass, due_ms): for a job without a key (fair_pass null) that is its due time, as
-- before, so a queue with no keyed jobs is ordered, indexed and written exactly as before (the
-- head index has as many entries, of the same width; an unkeyed enqueue writes no other row).
--
-- fairness_passes holds each key's last pass per queue: one row per (queue, key) that ever
-- enqueued, written only by keyed enqueues of that key (a row lock per key, never a shared one),
-- read and written in the enqueue's own statement, so every engine on the database and a
-- restarted one continue from it.
--
-- Rebuilding the head index locks the table for the length of the build, once, at upgrade.
-- `{{schema}}` is replaced by the quoted schema.
ALTER TABLE {{schema}}.jobs ADD COLUMN fair_pass bigint, ADD COLUMN fairness_key text;
CREATE TABLE {{schema}}.fairness_passes (
  queue text NOT NULL,
  fairness_key text NOT NULL,
  last_pass bigint NOT NULL,
  PRIMARY KEY (queue, fairness_key)
);
DROP INDEX {{schema}}.jobs_pending_head;
CREATE INDEX jobs_pending_head ON {{schema}}.jobs (queue, priority DESC, (GREATEST(fair_pass, due_ms)), ready_seq) WHERE due_ms IS NOT NULL AND state = 'pending';
