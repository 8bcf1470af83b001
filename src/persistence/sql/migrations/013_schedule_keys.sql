-- 013_schedule_keys — what a schedule's occurrence jobs carry besides the default stamps: a
-- priority, a fairness key with its weight, a concurrency key with its limit, as an enqueue gives
-- them. Each is null when the schedule gives none (the default priority, no key), so the
-- schedules registered before read as they did, and their occurrences are the jobs they were.
-- Registering a schedule again with other values re-anchors it, as another payload does.
-- `{{schema}}` is replaced by the quoted schema.
ALTER TABLE {{schema}}.job_schedules
  ADD COLUMN priority smallint,
  ADD COLUMN fairness_key text,
  ADD COLUMN fairness_weight double precision,
  ADD COLUMN concurrency_key text,
  ADD COLUMN concurrency_limit integer;
