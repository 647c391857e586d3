-- Snapshots: what each module's sources gave at its last refresh, one row per collected
-- prefix. Revisions: the aggregated, community-tagged prefix set of all enabled modules.

CREATE TABLE snapshot_records (
  tenant_id     uuid NOT NULL,
  module_id     uuid NOT NULL REFERENCES modules(id) ON DELETE CASCADE,
  prefix        text NOT NULL,
  source        text NOT NULL CHECK (source IN ('asn', 'domain', 'ip_range', 'cdn')),
  origin        text NOT NULL,
  -- When a source last returned this prefix; DOMAINS keep an address for keep_previous_minutes.
  last_seen_at  timestamptz NOT NULL
);
CREATE INDEX snapshot_records_module ON snapshot_records (module_id, source, origin);
CREATE INDEX snapshot_records_tenant ON snapshot_records (tenant_id);

-- Bumped whenever any snapshot of the tenant changes: readers that cache a derived index
-- (lookup) compare it with the one they built from.
CREATE TABLE tenant_generations (
  tenant_id            uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
  snapshot_generation  bigint NOT NULL DEFAULT 0
);

-- A revision is immutable. Its content is one gzip'd JSON document
-- ({v4: [[prefix, [communities], [module_ids]], ...], v6: [...]}, sorted by address): writing a
-- million prefixes is one row, rollback copies it, and readers cache it by (tenant, revision).
CREATE TABLE revisions (
  tenant_id             uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  revision_id           integer NOT NULL,
  created_at            timestamptz NOT NULL,
  created_by            text,
  reason                text NOT NULL CHECK (reason IN ('ingest', 'rollback')),
  rolled_back_from      integer,
  digest                text NOT NULL,
  prefix_count_v4       integer NOT NULL,
  prefix_count_v6       integer NOT NULL,
  input_prefix_count    integer NOT NULL,
  dropped_prefix_count  integer NOT NULL,
  modules               jsonb NOT NULL,
  content               bytea NOT NULL,
  PRIMARY KEY (tenant_id, revision_id)
);
