-- rl-bundle/2: a speaker's bundle is a small signed head (header, signature, config: speaker,
-- peers, BIRD settings) followed by the revision's prefix section, or by the edit script from
-- the revision the speaker runs. The sections do not depend on the speaker, so each is encoded,
-- hashed and stored once per revision (and base), sealed in pieces like the heads, and every
-- speaker's GetBundle streams the same stored pieces after its own head. base_revision_id 0 is
-- the full section. They go with their revision.
CREATE TABLE bundle_sections (
  tenant_id             uuid NOT NULL,
  revision_id           integer NOT NULL,
  base_revision_id      integer NOT NULL DEFAULT 0,
  -- Hex SHA-256 of these (plain) bytes, of the revision's full section, and of the base's.
  sha256                text NOT NULL,
  prefixes_sha256       text NOT NULL,
  base_prefixes_sha256  text,
  size                  integer NOT NULL,
  chunk                 integer NOT NULL CHECK (chunk > 0),
  body                  bytea NOT NULL,
  PRIMARY KEY (tenant_id, revision_id, base_revision_id),
  FOREIGN KEY (tenant_id, revision_id) REFERENCES revisions (tenant_id, revision_id) ON DELETE CASCADE,
  CHECK ((base_revision_id = 0) = (base_prefixes_sha256 IS NULL))
);

-- format 2: `envelope` is the sealed head of the full bundle; `delta_head`, when set, the sealed
-- head of the delta from `delta_base_revision_id` (one piece each: a head is a few KiB).
ALTER TABLE bundles
  ADD COLUMN format smallint NOT NULL DEFAULT 1,
  ADD COLUMN delta_base_revision_id integer,
  ADD COLUMN delta_head bytea,
  ADD CONSTRAINT bundles_delta_pair CHECK ((delta_base_revision_id IS NULL) = (delta_head IS NULL));
