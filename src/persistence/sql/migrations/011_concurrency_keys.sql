-- 011_concurrency_keys — per-key concurrency limits. A job enqueued with a concurrency key
-- carries the key and the limit of the queue handle that enqueued it (at most that many jobs of
-- the key processing at once, across every engine on the database).
--
-- concurrency_slots holds, per (queue, key), `held`: how many rows of the queue with that key are
-- processing, lapsed claims included (a lapsed claim holds its slot until its job is claimed
-- again in it, dead-lettered, cancelled or swept). Every statement that moves a keyed row into
-- or out of processing adjusts `held` in the same statement; a claim locks the key's row (in key
-- order, so two claims never wait on each other in a cycle) and reads the current `held` through
-- that lock, so two claims from two pools cannot both take the last slot: the guard is the row,
-- not the snapshot. A keyed enqueue creates the key's row (held 0) if it is missing; nothing
-- deletes rows, so a queue with unbounded distinct keys grows the table without bound.
--
-- A queue without keyed jobs never reads or writes the table (every guard starts with
-- `concurrency_key IS NULL`). `{{schema}}` is replaced by the quoted schema.
ALTER TABLE {{schema}}.jobs ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer CHECK (concurrency_limit >= 1);
CREATE TABLE {{schema}}.concurrency_slots (
  queue text NOT NULL,
  concurrency_key text NOT NULL,
  held integer NOT NULL CHECK (held >= 0),
  PRIMARY KEY (queue, concurrency_key)
);
-- A dead job keeps its key and limit, so that `retryDead` gives it back limited as it was.
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer;
