-- 011_concurrency_keys — per-key concurrency limits. A job enqueued with a concurrency key
-- carries the key; the key's limit (at most that many of the queue's jobs with the key
-- processing at once, across every engine on the database) lives in the key's row of
-- concurrency_slots, set by the enqueues of the key (the latest limit given wins).
--
-- concurrency_slots holds, per (queue, key), `held`: how many rows of the queue with that key are
-- processing, lapsed claims included (a lapsed claim holds its slot until its job is claimed
-- again in it, dead-lettered, cancelled or swept). Every statement that moves a keyed row into
-- or out of processing adjusts `held` in the same statement; a claim locks the key's row (in key
-- order, so two claims never wait on each other in a cycle) and reads the current `held` through
-- that lock, so two claims from two pools cannot both take the last slot: the guard is the row,
-- not the snapshot. A keyed enqueue creates the key's row (held 0) if it is missing, and writes
-- its limit only when it differs (an enqueue of an unchanged key locks nothing); nothing deletes
-- rows, so a queue with unbounded distinct keys grows the table without bound.
--
-- concurrency_slots_full indexes the keys at their limit: a claim's head read leaves their jobs
-- out through one read of it (a hashed subplan), so a key at its limit does not take the places
-- of other keys' jobs, and a claim of a queue whose keys all have room reads no slot row.
--
-- Keys and queue names compare bytewise (COLLATE "C"), as jobs.queue does: a claim joins its job
-- rows' keys to the slot rows, and a join across two collations could not use the primary key.
--
-- A queue without keyed jobs never writes the table. `{{schema}}` is replaced by the quoted schema.
ALTER TABLE {{schema}}.jobs ADD COLUMN concurrency_key text COLLATE "C";
-- A dead job keeps its key, so that `retryDead` gives it back limited as it was.
ALTER TABLE {{schema}}.dead_jobs ADD COLUMN concurrency_key text COLLATE "C";
CREATE TABLE {{schema}}.concurrency_slots (
  queue text COLLATE "C" NOT NULL,
  concurrency_key text COLLATE "C" NOT NULL,
  held integer NOT NULL CHECK (held >= 0),
  concurrency_limit integer NOT NULL CHECK (concurrency_limit >= 1),
  PRIMARY KEY (queue, concurrency_key)
);
CREATE INDEX concurrency_slots_full ON {{schema}}.concurrency_slots (queue, concurrency_key) WHERE held >= concurrency_limit;
