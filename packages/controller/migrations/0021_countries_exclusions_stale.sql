-- Policy routing by list (issue 27): country modules, modules that cut their addresses out of
-- what the tenant announces ("never steer"), and sources whose last good records expire.
--
-- The lists of module types and snapshot sources leave the CHECK constraints: they are the API's
-- ModuleType and the collector's sources, which the application validates on every write, and
-- changes made side by side (countries here, AS-SETs beside) each had to rewrite one list that
-- the other's migration then overwrote. What stays checked is the form of the value.
ALTER TABLE modules DROP CONSTRAINT IF EXISTS modules_type_check;
ALTER TABLE modules ADD CONSTRAINT modules_type_form CHECK (type ~ '^[A-Z][A-Z_]*$');
ALTER TABLE snapshots DROP CONSTRAINT IF EXISTS snapshots_source_check;
ALTER TABLE snapshots ADD CONSTRAINT snapshots_source_form CHECK (source ~ '^[a-z][a-z_]*$');

-- `announce`: the module's prefixes are announced with its community; `exclude`: they are cut
-- out of every prefix the tenant announces.
ALTER TABLE modules ADD COLUMN action text NOT NULL DEFAULT 'announce' CHECK (action IN ('announce', 'exclude'));

-- Hours a source's last good records outlive its last success. NULL: the tenant's
-- `source_max_stale_hours` setting; 0: kept forever (`max_stale_hours: null` in the API).
ALTER TABLE modules ADD COLUMN max_stale_hours integer CHECK (max_stale_hours BETWEEN 0 AND 87600);

-- When the source last gave this row's prefixes. NULL for rows written before this migration:
-- the module's collected_at stands in for them.
ALTER TABLE snapshots ADD COLUMN refreshed_at timestamptz;

-- COUNTRY modules: ISO 3166-1 alpha-2 codes, stored upper case.
CREATE TABLE country_entries (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  module_id   uuid NOT NULL,
  country     text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
  comment     text NOT NULL DEFAULT '' CHECK (char_length(comment) <= 256),
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  UNIQUE (module_id, country),
  FOREIGN KEY (tenant_id, module_id) REFERENCES modules (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX country_entries_module_id ON country_entries (module_id, id);
