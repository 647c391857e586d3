-- Background jobs: a PostgreSQL queue. Workers claim with FOR UPDATE SKIP LOCKED and hold a
-- lease (locked_until) that they renew while working; a job whose worker died is claimed again
-- once its lease runs out. Types: module_ingest, peer_reconcile, apply, maintenance_policy_run,
-- revision_prune, runtime_logs_cleanup.
CREATE TABLE jobs (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  type              text NOT NULL,
  status            text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  cancel_requested  boolean NOT NULL DEFAULT false,
  progress_done     integer,
  progress_total    integer,
  params            jsonb NOT NULL DEFAULT '{}'::jsonb,
  result            jsonb,
  error             jsonb,
  attempts          integer NOT NULL DEFAULT 0,
  max_attempts      integer NOT NULL DEFAULT 3,
  run_after         timestamptz NOT NULL,
  locked_by         text,
  locked_until      timestamptz,
  created_by        text,
  created_at        timestamptz NOT NULL,
  started_at        timestamptz,
  finished_at       timestamptz,
  updated_at        timestamptz NOT NULL
);
CREATE INDEX jobs_tenant_id ON jobs (tenant_id, id DESC);
CREATE INDEX jobs_claimable ON jobs (run_after, id) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_running_tenant ON jobs (tenant_id) WHERE status = 'running';
