-- Route lists: communities, DoH profiles, modules with their entries and CDN sources, and the
-- preview rate limit.
--
-- Tenancy is enforced by the schema as well as by the queries: every reference between tenant
-- rows is a composite foreign key on (tenant_id, id), so a module can never point at another
-- tenant's community or profile, nor an entry at another tenant's module.

CREATE TABLE communities (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  -- Canonical text: `A:B` (standard) or `A:B:C` (large), no leading zeros.
  community   text NOT NULL,
  title       text NOT NULL DEFAULT '',
  description text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  UNIQUE (tenant_id, community),
  UNIQUE (tenant_id, id)
);

CREATE TABLE doh_profiles (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name        text,
  url         text NOT NULL,
  method      text NOT NULL CHECK (method IN ('GET', 'POST')),
  format      text NOT NULL CHECK (format IN ('wire', 'json')),
  timeout_ms  integer NOT NULL CHECK (timeout_ms BETWEEN 100 AND 30000),
  headers     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  UNIQUE (tenant_id, id)
);
-- The name is optional; when given it is unique in the tenant.
CREATE UNIQUE INDEX doh_profiles_tenant_name ON doh_profiles (tenant_id, name) WHERE name IS NOT NULL;

CREATE TABLE modules (
  id                        uuid PRIMARY KEY,
  tenant_id                 uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name                      text NOT NULL,
  type                      text NOT NULL CHECK (type IN ('AS_PREFIXES', 'DOMAINS', 'IP_RANGES')),
  description               text NOT NULL DEFAULT '',
  enabled                   boolean NOT NULL DEFAULT true,
  community_id              uuid,
  -- DohResolverPolicy with every member filled in (defaults applied on write).
  doh_resolver_policy       jsonb NOT NULL,
  refresh_interval_minutes  integer CHECK (refresh_interval_minutes BETWEEN 5 AND 10080),
  last_refreshed_at         timestamptz,
  last_refresh_error        text,
  -- Counts of the module's current snapshot, written by the ingest job.
  prefix_count_v4           integer NOT NULL DEFAULT 0,
  prefix_count_v6           integer NOT NULL DEFAULT 0,
  collected_at              timestamptz,
  created_at                timestamptz NOT NULL,
  updated_at                timestamptz NOT NULL,
  UNIQUE (tenant_id, name),
  UNIQUE (tenant_id, id),
  -- NO ACTION (checked at the end of the statement), so deleting a tenant cascades cleanly;
  -- the service answers 409 naming the modules before this would fire.
  FOREIGN KEY (tenant_id, community_id) REFERENCES communities (tenant_id, id)
);
CREATE INDEX modules_community ON modules (tenant_id, community_id) WHERE community_id IS NOT NULL;

-- doh_profile_ids of a module, in the order the failover strategy asks them.
CREATE TABLE module_doh_profiles (
  tenant_id       uuid NOT NULL,
  module_id       uuid NOT NULL,
  position        smallint NOT NULL,
  doh_profile_id  uuid NOT NULL,
  PRIMARY KEY (module_id, position),
  UNIQUE (module_id, doh_profile_id),
  FOREIGN KEY (tenant_id, module_id) REFERENCES modules (tenant_id, id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, doh_profile_id) REFERENCES doh_profiles (tenant_id, id)
);
CREATE INDEX module_doh_profiles_profile ON module_doh_profiles (tenant_id, doh_profile_id);

-- Entries. Lists page by id (uuidv7, newest first) and the CSV export reads by id ascending,
-- so (module_id, id) serves both; (module_id, value) is the duplicate check.

CREATE TABLE as_entries (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  module_id   uuid NOT NULL,
  asn         bigint NOT NULL CHECK (asn BETWEEN 1 AND 4294967295),
  comment     text NOT NULL DEFAULT '' CHECK (char_length(comment) <= 256),
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  UNIQUE (module_id, asn),
  FOREIGN KEY (tenant_id, module_id) REFERENCES modules (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX as_entries_module_id ON as_entries (module_id, id);

CREATE TABLE domain_entries (
  id                  uuid PRIMARY KEY,
  tenant_id           uuid NOT NULL,
  module_id           uuid NOT NULL,
  -- Lower-case ASCII (IDN as punycode), no trailing dot.
  domain              text NOT NULL,
  include_subdomains  boolean NOT NULL DEFAULT false,
  comment             text NOT NULL DEFAULT '' CHECK (char_length(comment) <= 256),
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  UNIQUE (module_id, domain),
  FOREIGN KEY (tenant_id, module_id) REFERENCES modules (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX domain_entries_module_id ON domain_entries (module_id, id);
-- Lookup by name across a tenant's modules (lookup's entry layer).
CREATE INDEX domain_entries_tenant_domain ON domain_entries (tenant_id, domain);

CREATE TABLE ip_range_entries (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  module_id   uuid NOT NULL,
  -- The canonical text the API shows (RFC 5952 for IPv6, with `::ffff:a.b.c.d` for mapped
  -- addresses). Kept beside `network` because PostgreSQL's own text form differs in corners
  -- (`::1.2.3.4`, `64:ff9b::102:304`), and the API must show exactly what it validated.
  cidr        text NOT NULL,
  network     cidr NOT NULL,
  comment     text NOT NULL DEFAULT '' CHECK (char_length(comment) <= 256),
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  UNIQUE (module_id, cidr),
  FOREIGN KEY (tenant_id, module_id) REFERENCES modules (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX ip_range_entries_module_id ON ip_range_entries (module_id, id);
-- Containment lookups (`network >>= $address`) for the lookup route and the revision builder.
CREATE INDEX ip_range_entries_network ON ip_range_entries USING gist (network inet_ops);

CREATE TABLE cdn_sources (
  id                 uuid PRIMARY KEY,
  tenant_id          uuid NOT NULL,
  module_id          uuid NOT NULL,
  url                text NOT NULL,
  format             text NOT NULL CHECK (format IN ('text', 'json')),
  json_path          text,
  enabled            boolean NOT NULL DEFAULT true,
  allow_empty        boolean NOT NULL DEFAULT false,
  last_refreshed_at  timestamptz,
  last_error         text,
  last_prefix_count  integer,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL,
  CHECK ((format = 'json') = (json_path IS NOT NULL)),
  FOREIGN KEY (tenant_id, module_id) REFERENCES modules (tenant_id, id) ON DELETE CASCADE
);
-- One feed may be read twice with different paths (AWS: ip_prefix and ipv6_prefix).
CREATE UNIQUE INDEX cdn_sources_module_url ON cdn_sources (module_id, url, format, coalesce(json_path, ''));
CREATE INDEX cdn_sources_module_id ON cdn_sources (module_id, id);

-- Sliding-window rate limits (CDN preview: 10 calls a minute per tenant). One row per
-- (tenant, bucket) holds the times of the calls still inside the window, at most `limit` of
-- them; the upsert that adds a call locks the row, so concurrent controllers count exactly.
-- A fixed per-minute counter was the simpler choice, but it lets 20 calls through in two
-- seconds across a minute boundary.
CREATE TABLE rate_limits (
  tenant_id  uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  bucket     text NOT NULL,
  hits       timestamptz[] NOT NULL,
  PRIMARY KEY (tenant_id, bucket)
);
