-- 001_matching — the three Matching resources of seed 000: physical queue metadata, spooled
-- tasks, and queue-family user data. `{{schema}}` is replaced by the quoted schema name.
--
-- Canonical queue keys are ASCII (encodeQueueKey percent-encodes every name), and compare
-- under the "C" collation exactly as JavaScript compares them, so `list` order is the same in
-- every store whatever the database's default collation.

CREATE TABLE {{schema}}.task_queues (
  -- encodeQueueKey(key): the identity; the columns below repeat its parts for querying.
  queue_key text COLLATE "C" PRIMARY KEY,
  namespace text NOT NULL,
  family text NOT NULL,
  task_type text NOT NULL CHECK (task_type IN ('workflow', 'activity')),
  partition bigint NOT NULL CHECK (partition >= 0),
  -- Deployment version; null is the default queue of the partition.
  version text,
  -- Ownership fence: 1 at creation, +1 on every acquire, never reset.
  range_id bigint NOT NULL CHECK (range_id >= 1),
  -- Highest allocated task id; ids are consecutive per physical queue.
  last_task_id bigint NOT NULL DEFAULT 0 CHECK (last_task_id >= 0),
  -- Ack level per subqueue: {"<priority>": <task id>}; an absent subqueue is at 0.
  ack_levels jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(ack_levels) = 'object'),
  updated_at_ms bigint NOT NULL
);

CREATE INDEX task_queues_by_family ON {{schema}}.task_queues (namespace, family);

CREATE TABLE {{schema}}.tasks (
  queue_key text COLLATE "C" NOT NULL REFERENCES {{schema}}.task_queues (queue_key),
  task_id bigint NOT NULL CHECK (task_id >= 1),
  -- The task's priority (0…9): each subqueue is read and acknowledged on its own.
  subqueue smallint NOT NULL CHECK (subqueue BETWEEN 0 AND 9),
  -- The Task (domain/Task.ts) as JSON.
  data jsonb NOT NULL,
  PRIMARY KEY (queue_key, task_id)
);

-- Backlog reads page one subqueue in id order.
CREATE INDEX tasks_by_subqueue ON {{schema}}.tasks (queue_key, subqueue, task_id);

CREATE TABLE {{schema}}.task_queue_user_data (
  namespace text NOT NULL,
  family text NOT NULL,
  -- Optimistic version: 1 after the first write, +1 on every update.
  version bigint NOT NULL CHECK (version >= 1),
  data jsonb NOT NULL,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (namespace, family)
);
