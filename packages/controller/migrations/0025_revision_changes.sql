-- A revision is stored as a change against its parent where that is smaller: a refresh that
-- changed 1 % of a million prefixes wrote the whole 3 MB content again, and every read, diff and
-- guard walked both whole contents. `parent_id` set: `content` is a change (revision-change.ts:
-- the prefixes the parent had and this one lacks, those it adds with their tags, and the tags
-- that moved) to apply to the parent's content; NULL: `content` is whole, as before. The
-- chain is bounded (revision-store.ts): `chain_depth` changes since the last whole content and
-- `chain_changes` entries in them, so a read never walks far. The key keeps pruning from
-- deleting a revision a kept one depends on (the prune re-bases the kept one first).
ALTER TABLE revisions
  ADD COLUMN parent_id integer,
  ADD COLUMN chain_depth integer NOT NULL DEFAULT 0,
  ADD COLUMN chain_changes integer NOT NULL DEFAULT 0,
  ADD CONSTRAINT revisions_parent FOREIGN KEY (tenant_id, parent_id) REFERENCES revisions (tenant_id, revision_id),
  ADD CONSTRAINT revisions_parent_before CHECK (parent_id IS NULL OR parent_id < revision_id),
  ADD CONSTRAINT revisions_chain CHECK ((parent_id IS NULL) = (chain_depth = 0));
