-- 003_jobs — seed 004's job tables (DESIGN.md §7): live jobs (pending, processing), dead jobs
-- (moved there on dead-letter, as seed 004 §4 asks: a dead row must not sit in the claim
-- path's indexes), schedules and their lease. `{{schema}}` is replaced by the quoted schema.
--
-- Ids, queue and schedule names compare under the "C" collation, as JavaScript compares them.

-- The order in which rows became ready (enqueue, retry, claim, heartbeat): claim order's tie-break.
CREATE SEQUENCE {{schema}}.job_ready_seq;

CREATE TABLE {{schema}}.jobs (
  id text COLLATE "C" PRIMARY KEY,
  queue text COLLATE "C" NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'processing')),
  payload jsonb NOT NULL,
  priority smallint NOT NULL CHECK (priority BETWEEN 0 AND 9),
  -- Claims so far, fresh or reclaim.
  attempts integer NOT NULL CHECK (attempts >= 0),
  -- Options stamped at enqueue (seed 004 §3a).
  max_attempts integer NOT NULL CHECK (max_attempts >= 1),
  visibility_timeout_ms bigint NOT NULL CHECK (visibility_timeout_ms >= 1),
  backoff_base_ms bigint NOT NULL CHECK (backoff_base_ms >= 0),
  dead_letter_retention_ms bigint CHECK (dead_letter_retention_ms >= 0),
  created_at_ms bigint NOT NULL,
  run_at_ms bigint NOT NULL,
  claimed_at_ms bigint,
  expires_at_ms bigint,
  -- The current claim: its fence and its deadline (handle operations valid while now < deadline).
  claim_token text COLLATE "C",
  deadline_ms bigint,
  -- When the row needs a (new) Matching task; null while one is with Matching.
  due_ms bigint,
  ready_seq bigint NOT NULL DEFAULT nextval('{{schema}}.job_ready_seq'),
  -- +1 on every update: a delivery is confirmed only at the revision it reserved.
  revision bigint NOT NULL DEFAULT 1,
  CHECK ((state = 'processing') = (claim_token IS NOT NULL)),
  CHECK ((state = 'processing') = (deadline_ms IS NOT NULL))
);

-- The due-time driver's scan.
CREATE INDEX jobs_due ON {{schema}}.jobs (due_ms) WHERE due_ms IS NOT NULL;
-- Claimable jobs whose task is with Matching; sweeps by queue.
CREATE INDEX jobs_by_queue ON {{schema}}.jobs (queue, state) WHERE due_ms IS NULL;
CREATE INDEX jobs_expiring ON {{schema}}.jobs (queue, expires_at_ms) WHERE expires_at_ms IS NOT NULL;

CREATE TABLE {{schema}}.dead_jobs (
  id text COLLATE "C" PRIMARY KEY,
  queue text COLLATE "C" NOT NULL,
  payload jsonb NOT NULL,
  priority smallint NOT NULL CHECK (priority BETWEEN 0 AND 9),
  attempts integer NOT NULL CHECK (attempts >= 0),
  max_attempts integer NOT NULL CHECK (max_attempts >= 1),
  visibility_timeout_ms bigint NOT NULL CHECK (visibility_timeout_ms >= 1),
  backoff_base_ms bigint NOT NULL CHECK (backoff_base_ms >= 0),
  dead_letter_retention_ms bigint CHECK (dead_letter_retention_ms >= 0),
  created_at_ms bigint NOT NULL,
  run_at_ms bigint NOT NULL,
  claimed_at_ms bigint,
  expires_at_ms bigint,
  last_error text NOT NULL,
  died_at_ms bigint NOT NULL
);

-- Retention sweeps by queue.
CREATE INDEX dead_jobs_by_queue ON {{schema}}.dead_jobs (queue, died_at_ms);

CREATE TABLE {{schema}}.job_schedules (
  name text COLLATE "C" PRIMARY KEY,
  spec text NOT NULL,
  queue text COLLATE "C" NOT NULL,
  payload jsonb NOT NULL,
  -- Occurrences are counted from here: registration, or the last change of spec/queue/payload.
  anchor_ms bigint NOT NULL,
  -- The latest occurrence enqueued.
  last_fired_ms bigint,
  -- Compare-and-set token: +1 on every change and every firing.
  revision bigint NOT NULL CHECK (revision >= 1)
);

CREATE TABLE {{schema}}.job_leases (
  name text COLLATE "C" PRIMARY KEY,
  holder text COLLATE "C" NOT NULL,
  -- Fencing token: +1 whenever the lease changes holder or is re-taken after expiry.
  fence bigint NOT NULL CHECK (fence >= 1),
  expires_at_ms bigint NOT NULL
);
