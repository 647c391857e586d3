-- Waiting is not work: an apply that has issued its bundles parks as `awaiting` (no worker holds
-- it) until the agents' reports or its deadline end it. `awaiting` keeps what the job waits for
-- (per speaker: the bundle issued and its outcome so far); `deadline_at` is when the sweep ends it.
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
  CHECK (status IN ('queued', 'running', 'awaiting', 'succeeded', 'failed', 'cancelled'));
ALTER TABLE jobs ADD COLUMN awaiting jsonb;
ALTER TABLE jobs ADD COLUMN deadline_at timestamptz;
CREATE INDEX jobs_awaiting ON jobs (tenant_id, deadline_at) WHERE status = 'awaiting';
CREATE INDEX jobs_queued_tenant ON jobs (tenant_id) WHERE status = 'queued';
