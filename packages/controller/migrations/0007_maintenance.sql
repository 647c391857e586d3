-- Maintenance policies: a named set of clean-up actions that the scheduler runs every
-- interval_minutes as a maintenance_policy_run job. next_run_at is NULL while disabled.
CREATE TABLE maintenance_policies (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name              text NOT NULL,
  enabled           boolean NOT NULL,
  interval_minutes  integer NOT NULL CHECK (interval_minutes BETWEEN 5 AND 43200),
  -- [{type: "revision_prune"} | {type: "runtime_logs_cleanup", threshold_bytes?, mode?} |
  --  {type: "audit_retention", days} | {type: "jobs_retention", days}], validated by the API.
  actions           jsonb NOT NULL,
  last_run_at       timestamptz,
  next_run_at       timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  UNIQUE (tenant_id, name)
);
CREATE INDEX maintenance_policies_tenant_id ON maintenance_policies (tenant_id, id DESC);
CREATE INDEX maintenance_policies_due ON maintenance_policies (next_run_at) WHERE enabled;

-- The retention actions delete by age within a tenant.
CREATE INDEX audit_records_tenant_at ON audit_records (tenant_id, at);
CREATE INDEX jobs_tenant_finished ON jobs (tenant_id, finished_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
