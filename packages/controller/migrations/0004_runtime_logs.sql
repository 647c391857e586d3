-- One record per runtime-log cleanup: manual DELETEs, API auto-runs, the scheduler's runs and
-- dry runs alike: every cleanup writes one.
CREATE TABLE runtime_log_cleanup_audit (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  at            timestamptz NOT NULL,
  actor         text NOT NULL,
  actor_prefix  text NOT NULL,
  filename      text NOT NULL,
  mode          text NOT NULL CHECK (mode IN ('truncate', 'delete')),
  bytes_before  bigint,
  bytes_after   bigint,
  dry_run       boolean NOT NULL,
  result        text NOT NULL,
  error         text
);
CREATE INDEX runtime_log_cleanup_audit_tenant_id ON runtime_log_cleanup_audit (tenant_id, id DESC);
