-- 005_job_claim_head — the head of one queue's due rows in claim order (priority, then due
-- time, then ready order), for `claimDue`: the engine that delivers a queue claims straight from
-- it for its own waiting workers. `jobs_due` orders every queue's rows by due time only, so a
-- head claim on it would read past other queues' rows and past the queue's lower priorities.
-- `{{schema}}` is replaced by the quoted schema.
CREATE INDEX jobs_claim_head ON {{schema}}.jobs (queue, priority DESC, due_ms, ready_seq) WHERE due_ms IS NOT NULL;
