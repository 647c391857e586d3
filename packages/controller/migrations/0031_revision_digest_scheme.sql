-- How a revision's digest was computed. 1: the SHA-256 of its lines (every revision stored
-- before this migration). 2: the SHA-256 of its lines' groups by address, each group hashed
-- alone, so that an incremental refresh hashes only the groups it touched (revision-digest.ts).
-- A refresh compares the digest it built with the current revision's by the current one's
-- scheme, so the first refresh after the upgrade does not store a revision equal to the last.
-- Older controllers neither write nor read the column: what they insert is scheme 1, as their
-- digests are.
ALTER TABLE revisions ADD COLUMN digest_scheme smallint NOT NULL DEFAULT 1;
