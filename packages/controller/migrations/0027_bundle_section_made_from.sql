-- A revision's full prefix section was sealed and written whole in the refresh's transaction:
-- for 1.2M prefixes 33 MB sent as hex and sealed, 2.7 s of a refresh that changed 1 % of them,
-- while the delta an agent fetches is a few hundred KB. Now a full section made from its base's
-- may be stored as that base's full section and the delta from it (`made_from`, the base's
-- revision; `body` NULL), `made_depth` deltas from a body stored whole. The process that made it
-- writes the body soon after the commit; until then any replica opens it by applying the delta
-- row (revision_id, made_from) to the base's full section, or makes it from the revision's
-- content when that base is gone. The chain is bounded as revision contents are (REVISION_STORAGE).
ALTER TABLE bundle_sections ALTER COLUMN body DROP NOT NULL;
ALTER TABLE bundle_sections
  ADD COLUMN made_from integer,
  ADD COLUMN made_depth smallint NOT NULL DEFAULT 0,
  ADD CONSTRAINT bundle_sections_made_from CHECK (
    (body IS NULL) = (made_from IS NOT NULL) AND (made_from IS NULL OR base_revision_id = 0) AND ((made_from IS NULL) = (made_depth = 0))
  );
