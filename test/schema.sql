-- Catalogue dump of the migrated `matchbox` schema (test/schema.test.ts).
-- Regenerate: UPDATE_SCHEMA_DUMP=1 npx vitest run test/schema.test.ts

-- migrations
migration 1 matching
migration 2 membership

table membership_hosts
  column host_id text collate "C" not null
  column last_seen_ms bigint not null
  column expires_at_ms bigint not null

table migrations
  column version integer not null
  column name text not null
  column applied_at timestamp with time zone not null default now()

table task_queue_user_data
  column namespace text not null
  column family text not null
  column version bigint not null
  column data jsonb not null
  column updated_at_ms bigint not null

table task_queues
  column queue_key text collate "C" not null
  column namespace text not null
  column family text not null
  column task_type text not null
  column partition bigint not null
  column version text
  column range_id bigint not null
  column last_task_id bigint not null default 0
  column ack_levels jsonb not null default '{}'::jsonb
  column updated_at_ms bigint not null

table tasks
  column queue_key text collate "C" not null
  column task_id bigint not null
  column subqueue smallint not null
  column data jsonb not null

-- constraints
constraint membership_hosts.membership_hosts_expiry_after_last_seen CHECK ((expires_at_ms > last_seen_ms))
constraint membership_hosts.membership_hosts_last_seen_ms_check CHECK ((last_seen_ms >= 0))
constraint membership_hosts.membership_hosts_pkey PRIMARY KEY (host_id)
constraint migrations.migrations_pkey PRIMARY KEY (version)
constraint task_queue_user_data.task_queue_user_data_pkey PRIMARY KEY (namespace, family)
constraint task_queue_user_data.task_queue_user_data_version_check CHECK ((version >= 1))
constraint task_queues.task_queues_ack_levels_check CHECK ((jsonb_typeof(ack_levels) = 'object'::text))
constraint task_queues.task_queues_last_task_id_check CHECK ((last_task_id >= 0))
constraint task_queues.task_queues_partition_check CHECK ((partition >= 0))
constraint task_queues.task_queues_pkey PRIMARY KEY (queue_key)
constraint task_queues.task_queues_range_id_check CHECK ((range_id >= 1))
constraint task_queues.task_queues_task_type_check CHECK ((task_type = ANY (ARRAY['workflow'::text, 'activity'::text])))
constraint tasks.tasks_pkey PRIMARY KEY (queue_key, task_id)
constraint tasks.tasks_queue_key_fkey FOREIGN KEY (queue_key) REFERENCES matchbox.task_queues(queue_key)
constraint tasks.tasks_subqueue_check CHECK (((subqueue >= 0) AND (subqueue <= 9)))
constraint tasks.tasks_task_id_check CHECK ((task_id >= 1))

-- indexes
index membership_hosts.membership_hosts_pkey CREATE UNIQUE INDEX membership_hosts_pkey ON matchbox.membership_hosts USING btree (host_id)
index migrations.migrations_pkey CREATE UNIQUE INDEX migrations_pkey ON matchbox.migrations USING btree (version)
index task_queue_user_data.task_queue_user_data_pkey CREATE UNIQUE INDEX task_queue_user_data_pkey ON matchbox.task_queue_user_data USING btree (namespace, family)
index task_queues.task_queues_by_family CREATE INDEX task_queues_by_family ON matchbox.task_queues USING btree (namespace, family)
index task_queues.task_queues_pkey CREATE UNIQUE INDEX task_queues_pkey ON matchbox.task_queues USING btree (queue_key)
index tasks.tasks_by_subqueue CREATE INDEX tasks_by_subqueue ON matchbox.tasks USING btree (queue_key, subqueue, task_id)
index tasks.tasks_pkey CREATE UNIQUE INDEX tasks_pkey ON matchbox.tasks USING btree (queue_key, task_id)
