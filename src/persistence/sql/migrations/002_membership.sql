-- 002_membership — dynamic membership's host rows (DESIGN.md §6): each live Matching host
-- upserts its row on every heartbeat; a host counts as live while expires_at_ms is after the
-- reader's now. `{{schema}}` is replaced by the quoted schema name.
--
-- Host ids compare under the "C" collation, as JavaScript compares them, so `liveHosts` order
-- is the same in every store whatever the database's default collation.

CREATE TABLE {{schema}}.membership_hosts (
  host_id text COLLATE "C" PRIMARY KEY,
  -- The host's now at its last heartbeat, epoch ms.
  last_seen_ms bigint NOT NULL CHECK (last_seen_ms >= 0),
  -- last_seen_ms + the host's TTL: live while the reader's now is before it.
  expires_at_ms bigint NOT NULL,
  CONSTRAINT membership_hosts_expiry_after_last_seen CHECK (expires_at_ms > last_seen_ms)
);
