-- Catalogue dump of the migrated `matchbox` schema (test/schema.test.ts).
-- Regenerate: UPDATE_SCHEMA_DUMP=1 npx vitest run test/schema.test.ts

-- migrations
migration 1 matching
migration 2 membership
migration 3 jobs
migration 4 job_admin
migration 5 job_claim_head
migration 6 job_release
migration 7 operator_controls
migration 8 job_timeline
migration 9 job_claim_indexes
migration 10 fairness
migration 11 concurrency_keys
migration 12 rate_limits
migration 13 schedule_keys
migration 14 job_waiters

table concurrency_slots
  column queue text collate "C" not null
  column concurrency_key text collate "C" not null
  column held integer not null
  column concurrency_limit integer not null

table dead_jobs
  column id text collate "C" not null
  column queue text collate "C" not null
  column payload jsonb not null
  column priority smallint not null
  column attempts integer not null
  column max_attempts integer not null
  column visibility_timeout_ms bigint not null
  column backoff_base_ms bigint not null
  column dead_letter_retention_ms bigint
  column created_at_ms bigint not null
  column run_at_ms bigint not null
  column claimed_at_ms bigint
  column expires_at_ms bigint
  column last_error text not null
  column died_at_ms bigint not null
  column job_key text collate "C"
  column last_handler_error text
  column last_handler_stack text
  column attempt_errors jsonb
  column progress jsonb
  column claim_history jsonb
  column progress_at_ms bigint
  column concurrency_key text collate "C"

table fairness_passes
  column queue text not null
  column fairness_key text not null
  column last_pass bigint not null

table job_leases
  column name text collate "C" not null
  column holder text collate "C" not null
  column fence bigint not null
  column expires_at_ms bigint not null

table job_schedules
  column name text collate "C" not null
  column spec text not null
  column queue text collate "C" not null
  column payload jsonb not null
  column anchor_ms bigint not null
  column last_fired_ms bigint
  column revision bigint not null
  column timezone text
  column priority smallint
  column fairness_key text
  column fairness_weight double precision
  column concurrency_key text
  column concurrency_limit integer

table job_waiters
  column claim_token text collate "C" not null
  column queue text collate "C" not null
  column host_id text collate "C" not null
  column channel text not null
  column until_ms bigint not null
  column queue_key text not null
  column range_id bigint not null
  column seq bigint not null default nextval('matchbox.job_waiters_seq_seq'::regclass)

table jobs
  column id text collate "C" not null
  column queue text collate "C" not null
  column state text not null
  column payload jsonb not null
  column priority smallint not null
  column attempts integer not null
  column max_attempts integer not null
  column visibility_timeout_ms bigint not null
  column backoff_base_ms bigint not null
  column dead_letter_retention_ms bigint
  column created_at_ms bigint not null
  column run_at_ms bigint not null
  column claimed_at_ms bigint
  column expires_at_ms bigint
  column claim_token text collate "C"
  column deadline_ms bigint
  column due_ms bigint
  column ready_seq bigint not null default nextval('matchbox.job_ready_seq'::regclass)
  column revision bigint not null default 1
  column job_key text collate "C"
  column last_handler_error text
  column last_handler_stack text
  column unclaimed_due_ms bigint
  column unclaimed_ready_seq bigint
  column attempt_errors jsonb
  column progress jsonb
  column claim_history jsonb
  column progress_at_ms bigint
  column fair_pass bigint
  column fairness_key text
  column concurrency_key text collate "C"

table membership_hosts
  column host_id text collate "C" not null
  column last_seen_ms bigint not null
  column expires_at_ms bigint not null

table migrations
  column version integer not null
  column name text not null
  column applied_at timestamp with time zone not null default now()

table queue_pauses
  column queue text collate "C" not null
  column paused_at_ms bigint not null

table rate_buckets
  column queue text collate "C" not null
  column per_key boolean not null
  column rate_key text collate "C" not null
  column tokens double precision not null
  column refilled_ms bigint not null
  column next_token_ms bigint not null
  column per_second double precision not null
  column burst integer not null

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
constraint concurrency_slots.concurrency_slots_concurrency_limit_check CHECK ((concurrency_limit >= 1))
constraint concurrency_slots.concurrency_slots_held_check CHECK ((held >= 0))
constraint concurrency_slots.concurrency_slots_pkey PRIMARY KEY (queue, concurrency_key)
constraint dead_jobs.dead_jobs_attempts_check CHECK ((attempts >= 0))
constraint dead_jobs.dead_jobs_backoff_base_ms_check CHECK ((backoff_base_ms >= 0))
constraint dead_jobs.dead_jobs_dead_letter_retention_ms_check CHECK ((dead_letter_retention_ms >= 0))
constraint dead_jobs.dead_jobs_max_attempts_check CHECK ((max_attempts >= 1))
constraint dead_jobs.dead_jobs_pkey PRIMARY KEY (id)
constraint dead_jobs.dead_jobs_priority_check CHECK (((priority >= 0) AND (priority <= 9)))
constraint dead_jobs.dead_jobs_visibility_timeout_ms_check CHECK ((visibility_timeout_ms >= 1))
constraint fairness_passes.fairness_passes_pkey PRIMARY KEY (queue, fairness_key)
constraint job_leases.job_leases_fence_check CHECK ((fence >= 1))
constraint job_leases.job_leases_pkey PRIMARY KEY (name)
constraint job_schedules.job_schedules_pkey PRIMARY KEY (name)
constraint job_schedules.job_schedules_revision_check CHECK ((revision >= 1))
constraint job_waiters.job_waiters_pkey PRIMARY KEY (claim_token)
constraint jobs.jobs_attempts_check CHECK ((attempts >= 0))
constraint jobs.jobs_backoff_base_ms_check CHECK ((backoff_base_ms >= 0))
constraint jobs.jobs_check CHECK (((state = 'processing'::text) = (claim_token IS NOT NULL)))
constraint jobs.jobs_check1 CHECK (((state = 'processing'::text) = (deadline_ms IS NOT NULL)))
constraint jobs.jobs_dead_letter_retention_ms_check CHECK ((dead_letter_retention_ms >= 0))
constraint jobs.jobs_max_attempts_check CHECK ((max_attempts >= 1))
constraint jobs.jobs_pkey PRIMARY KEY (id)
constraint jobs.jobs_priority_check CHECK (((priority >= 0) AND (priority <= 9)))
constraint jobs.jobs_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'processing'::text])))
constraint jobs.jobs_visibility_timeout_ms_check CHECK ((visibility_timeout_ms >= 1))
constraint membership_hosts.membership_hosts_expiry_after_last_seen CHECK ((expires_at_ms > last_seen_ms))
constraint membership_hosts.membership_hosts_last_seen_ms_check CHECK ((last_seen_ms >= 0))
constraint membership_hosts.membership_hosts_pkey PRIMARY KEY (host_id)
constraint migrations.migrations_pkey PRIMARY KEY (version)
constraint queue_pauses.queue_pauses_pkey PRIMARY KEY (queue)
constraint rate_buckets.rate_buckets_burst_check CHECK ((burst >= 1))
constraint rate_buckets.rate_buckets_per_second_check CHECK ((per_second > (0)::double precision))
constraint rate_buckets.rate_buckets_pkey PRIMARY KEY (queue, per_key, rate_key)
constraint rate_buckets.rate_buckets_tokens_check CHECK ((tokens >= (0)::double precision))
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
index concurrency_slots.concurrency_slots_full CREATE INDEX concurrency_slots_full ON matchbox.concurrency_slots USING btree (queue, concurrency_key) WHERE (held >= concurrency_limit)
index concurrency_slots.concurrency_slots_pkey CREATE UNIQUE INDEX concurrency_slots_pkey ON matchbox.concurrency_slots USING btree (queue, concurrency_key)
index dead_jobs.dead_jobs_by_queue CREATE INDEX dead_jobs_by_queue ON matchbox.dead_jobs USING btree (queue, died_at_ms)
index dead_jobs.dead_jobs_by_queue_id CREATE INDEX dead_jobs_by_queue_id ON matchbox.dead_jobs USING btree (queue, id)
index dead_jobs.dead_jobs_by_queue_key CREATE INDEX dead_jobs_by_queue_key ON matchbox.dead_jobs USING btree (queue, job_key) WHERE (job_key IS NOT NULL)
index dead_jobs.dead_jobs_pkey CREATE UNIQUE INDEX dead_jobs_pkey ON matchbox.dead_jobs USING btree (id)
index fairness_passes.fairness_passes_pkey CREATE UNIQUE INDEX fairness_passes_pkey ON matchbox.fairness_passes USING btree (queue, fairness_key)
index job_leases.job_leases_pkey CREATE UNIQUE INDEX job_leases_pkey ON matchbox.job_leases USING btree (name)
index job_schedules.job_schedules_pkey CREATE UNIQUE INDEX job_schedules_pkey ON matchbox.job_schedules USING btree (name)
index job_waiters.job_waiters_pkey CREATE UNIQUE INDEX job_waiters_pkey ON matchbox.job_waiters USING btree (claim_token)
index job_waiters.job_waiters_queue CREATE INDEX job_waiters_queue ON matchbox.job_waiters USING btree (queue, seq)
index jobs.jobs_by_queue CREATE INDEX jobs_by_queue ON matchbox.jobs USING btree (queue, state) WHERE (due_ms IS NULL)
index jobs.jobs_expiring CREATE INDEX jobs_expiring ON matchbox.jobs USING btree (queue, expires_at_ms) WHERE (expires_at_ms IS NOT NULL)
index jobs.jobs_live_key CREATE UNIQUE INDEX jobs_live_key ON matchbox.jobs USING btree (queue, job_key) WHERE (job_key IS NOT NULL)
index jobs.jobs_pending_by_id CREATE INDEX jobs_pending_by_id ON matchbox.jobs USING btree (queue, id) WHERE (state = 'pending'::text)
index jobs.jobs_pending_due CREATE INDEX jobs_pending_due ON matchbox.jobs USING btree (due_ms) WHERE ((due_ms IS NOT NULL) AND (state = 'pending'::text))
index jobs.jobs_pending_head CREATE INDEX jobs_pending_head ON matchbox.jobs USING btree (queue, priority DESC, GREATEST(fair_pass, due_ms), ready_seq) WHERE ((due_ms IS NOT NULL) AND (state = 'pending'::text))
index jobs.jobs_pkey CREATE UNIQUE INDEX jobs_pkey ON matchbox.jobs USING btree (id)
index jobs.jobs_processing CREATE INDEX jobs_processing ON matchbox.jobs USING btree (queue, due_ms) WHERE (state = 'processing'::text)
index membership_hosts.membership_hosts_pkey CREATE UNIQUE INDEX membership_hosts_pkey ON matchbox.membership_hosts USING btree (host_id)
index migrations.migrations_pkey CREATE UNIQUE INDEX migrations_pkey ON matchbox.migrations USING btree (version)
index queue_pauses.queue_pauses_pkey CREATE UNIQUE INDEX queue_pauses_pkey ON matchbox.queue_pauses USING btree (queue)
index rate_buckets.rate_buckets_empty CREATE INDEX rate_buckets_empty ON matchbox.rate_buckets USING btree (queue, next_token_ms)
index rate_buckets.rate_buckets_pkey CREATE UNIQUE INDEX rate_buckets_pkey ON matchbox.rate_buckets USING btree (queue, per_key, rate_key)
index task_queue_user_data.task_queue_user_data_pkey CREATE UNIQUE INDEX task_queue_user_data_pkey ON matchbox.task_queue_user_data USING btree (namespace, family)
index task_queues.task_queues_by_family CREATE INDEX task_queues_by_family ON matchbox.task_queues USING btree (namespace, family)
index task_queues.task_queues_pkey CREATE UNIQUE INDEX task_queues_pkey ON matchbox.task_queues USING btree (queue_key)
index tasks.tasks_by_subqueue CREATE INDEX tasks_by_subqueue ON matchbox.tasks USING btree (queue_key, subqueue, task_id)
index tasks.tasks_pkey CREATE UNIQUE INDEX tasks_pkey ON matchbox.tasks USING btree (queue_key, task_id)
