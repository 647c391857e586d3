-- Foundation: tenants, API keys, settings, audit journal with its push outbox, idempotency.
-- Every table that holds tenant data carries tenant_id, and every query filters on it.

CREATE TABLE tenants (
  id          uuid PRIMARY KEY,
  name        text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL
);

CREATE TABLE api_keys (
  id                    uuid PRIMARY KEY,
  tenant_id             uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name                  text NOT NULL,
  role                  text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'superadmin', 'node')),
  key_prefix            text NOT NULL UNIQUE,
  secret_hash           bytea NOT NULL,
  -- After a rotation the old secret keeps working until previous_valid_until (grace).
  previous_secret_hash  bytea,
  previous_valid_until  timestamptz,
  speaker_id            uuid,
  expires_at            timestamptz,
  last_used_at          timestamptz,
  revoked_at            timestamptz,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL
);
CREATE INDEX api_keys_tenant_id ON api_keys (tenant_id, id DESC);

CREATE TABLE tenant_settings (
  tenant_id   uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
  settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at  timestamptz
);

CREATE TABLE audit_records (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL,
  at                timestamptz NOT NULL,
  actor_key_id      uuid,
  actor_key_prefix  text,
  actor_role        text,
  action            text NOT NULL,
  resource_type     text NOT NULL,
  resource_id       text,
  severity          text NOT NULL,
  request_id        text,
  summary           text NOT NULL,
  changes           jsonb NOT NULL DEFAULT '{}'::jsonb,
  policy_id         uuid
);
CREATE INDEX audit_records_tenant_id ON audit_records (tenant_id, id DESC);

-- Records waiting to be pushed to the auth portal. A pusher leases rows by moving
-- next_attempt_at forward (so no transaction is held during the HTTP call) and deletes
-- a row once the portal answered 2xx.
CREATE TABLE audit_outbox (
  record_id        uuid PRIMARY KEY REFERENCES audit_records(id) ON DELETE CASCADE,
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  last_error       text
);
CREATE INDEX audit_outbox_next ON audit_outbox (next_attempt_at);

-- Stored 2xx answers for Idempotency-Key replays (24 h). The in-flight claim is a
-- transaction-scoped advisory lock, so it commits or vanishes with the effect.
CREATE TABLE idempotency_keys (
  tenant_id       uuid NOT NULL,
  key             text NOT NULL,
  request_hash    text NOT NULL,
  status_code     integer NOT NULL,
  response_body   text,
  response_headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
