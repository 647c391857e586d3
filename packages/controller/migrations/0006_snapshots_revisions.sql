-- Snapshots: what each module's sources gave at its last refresh. Revisions: the aggregated,
-- community-tagged prefix set of all enabled modules.
--
-- One row per source of a module (source, origin: the ASN, the domain, the IP-range entry id
-- or the CDN source id) holding all its prefixes as one array. Measured in the bench (1.2M
-- collected prefixes): one row per prefix took 15-21 s to write (1.2M index entries in
-- 50k-row batches) and reading a previous snapshot back made 1.2M objects; 402 rows write in
-- 0.5-0.8 s and a read is one array_to_string per row.
CREATE TABLE snapshots (
  tenant_id  uuid NOT NULL,
  module_id  uuid NOT NULL REFERENCES modules(id) ON DELETE CASCADE,
  source     text NOT NULL CHECK (source IN ('asn', 'domain', 'ip_range', 'cdn')),
  origin     text NOT NULL,
  prefixes   text[] NOT NULL,
  -- DOMAINS: when the source last returned each address (parallel to prefixes), so an address
  -- that rotated away stays for keep_previous_minutes. NULL for the other sources.
  seen_at    timestamptz[],
  PRIMARY KEY (module_id, source, origin),
  CHECK (seen_at IS NULL OR cardinality(seen_at) = cardinality(prefixes))
);
CREATE INDEX snapshots_tenant ON snapshots (tenant_id);
-- Stored out of line without pglz: an 850k-prefix row writes in ~0.5 s instead of ~1.2 s and
-- takes 23 MB instead of 8.5 MB. Snapshots are rewritten whole on every refresh; time wins.
ALTER TABLE snapshots ALTER COLUMN prefixes SET STORAGE EXTERNAL;

-- Bumped whenever any snapshot of the tenant changes: readers that cache a derived index
-- (lookup) compare it with the one they built from.
CREATE TABLE tenant_generations (
  tenant_id            uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
  snapshot_generation  bigint NOT NULL DEFAULT 0
);

-- A revision is immutable. Its content is one gzip'd, columnar JSON document (module ids once,
-- then per family the prefixes sorted by address and a tag index each; revision-store.ts):
-- writing a million prefixes is one row, rollback copies it, and readers cache it by
-- (tenant, revision).
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
