-- When each periodic task last ran, per tenant where it is per tenant (nil uuid otherwise).
-- Kept in the database so a new scheduler leader carries on where the old one stopped.
CREATE TABLE scheduler_runs (
  task         text NOT NULL,
  tenant_id    uuid NOT NULL,
  last_run_at  timestamptz NOT NULL,
  PRIMARY KEY (task, tenant_id)
);
