-- 012_rate_limits — rate limits: how many of a queue's jobs claims may start per second, across
-- every engine on the database, as token buckets held by the database.
--
-- rate_buckets holds one bucket per (queue, scope): the queue-wide bucket (`per_key` false,
-- `rate_key` '') and one per fairness key (`per_key` true, `rate_key` the job's fairness key, ''
-- for jobs without one: unkeyed jobs share one bucket). A bucket holds `tokens` as of
-- `refilled_ms`; at time t it holds min(burst, tokens + (t - refilled_ms) * per_second / 1000).
-- Every statement that moves a job to processing (a claim, a reclaim of a lapsed claim) takes
-- one token of its queue's bucket and one of its key's, and locks the buckets it takes from (in
-- (queue, per_key, rate_key) order, so two claims never wait on each other in a cycle), reading
-- them through the lock: two claims from two pools cannot both take the last token. A claim's
-- `now` never moves `refilled_ms` back, so a caller whose clock is behind mints nothing.
--
-- `next_token_ms` is when a bucket next holds a whole token (0 when it holds one already): a claim's head read leaves out the jobs of buckets empty as of now through
-- rate_buckets_empty, and the due-time driver's next due time includes it, so a limited queue's
-- engine comes back when the next token arrives.
--
-- The limits (`per_second`, `burst`) are written by the queue's enqueues (the latest limit given
-- wins); a queue whose enqueues never gave a limit has no row and its claims read none. Nothing
-- deletes rows: a queue with per-key limits and unbounded distinct keys grows the table.
-- `{{schema}}` is replaced by the quoted schema.
CREATE TABLE {{schema}}.rate_buckets (
  queue text COLLATE "C" NOT NULL,
  per_key boolean NOT NULL,
  rate_key text COLLATE "C" NOT NULL,
  tokens double precision NOT NULL CHECK (tokens >= 0),
  refilled_ms bigint NOT NULL,
  next_token_ms bigint NOT NULL,
  per_second double precision NOT NULL CHECK (per_second > 0),
  burst integer NOT NULL CHECK (burst >= 1),
  PRIMARY KEY (queue, per_key, rate_key)
);
CREATE INDEX rate_buckets_empty ON {{schema}}.rate_buckets (queue, next_token_ms);
