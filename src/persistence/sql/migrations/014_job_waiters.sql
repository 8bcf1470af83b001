-- 014_job_waiters — claims waiting in an engine's line, registered so that an enqueue on another
-- engine (a producer's) may insert its job already claimed for one of them and send it to that
-- engine in the same statement (jobs/HandOver.ts). A row is the waiter's claim token, its engine,
-- the LISTEN channel that engine hears (the bus's host channel), until when it waits, and the
-- range fence of the partition its engine owns (the enqueue takes it only under that range);
-- `seq` orders the waiters of a queue first come first served. Rows are deleted by the enqueue
-- that takes them or by their engine when its claim stops waiting; a queue's rows whose time has
-- passed (an engine that died) go at the next registration on the queue.
-- `{{schema}}` is replaced by the quoted schema.
CREATE TABLE {{schema}}.job_waiters (
  claim_token text COLLATE "C" PRIMARY KEY,
  queue text COLLATE "C" NOT NULL,
  host_id text COLLATE "C" NOT NULL,
  channel text NOT NULL,
  until_ms bigint NOT NULL,
  queue_key text NOT NULL,
  range_id bigint NOT NULL,
  seq bigserial NOT NULL
);
CREATE INDEX job_waiters_queue ON {{schema}}.job_waiters (queue, seq);
