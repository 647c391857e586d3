-- Secrets at rest and per-tenant signing keys.
--
-- Peer passwords, DoH header values and signing seeds are sealed with the controller's data key
-- (AES-256-GCM). SQL cannot seal, so rows written before this migration stay plain text until the
-- controller's start seals them (services/secrets-at-rest.ts); the flags below say which rows are
-- sealed, so a plain value that merely looks like a sealed one is never mistaken for one.

ALTER TABLE peers ADD COLUMN password_sealed boolean NOT NULL DEFAULT false;

-- headers: {name: value}; with headers_sealed every value is a sealed text.
ALTER TABLE doh_profiles ADD COLUMN headers_sealed boolean NOT NULL DEFAULT false;

-- Each tenant signs its bundles with its own key. tenant_id NULL: a deployment-wide key — the one
-- pinned by BUNDLE_SIGNING_KEY_FILE, or the single key every tenant shared before this migration
-- (each tenant's first own key is introduced by a statement signed with it, then it retires).
ALTER TABLE signing_keys ADD COLUMN tenant_id uuid REFERENCES tenants(id) ON DELETE CASCADE;
ALTER TABLE signing_keys ADD COLUMN seed_sealed text;
DROP INDEX signing_keys_one_active;
CREATE UNIQUE INDEX signing_keys_one_active_per_tenant ON signing_keys (tenant_id) WHERE status = 'active' AND tenant_id IS NOT NULL;
CREATE INDEX signing_keys_tenant ON signing_keys (tenant_id, created_at);
