-- The page root (rl-prefix-pages/1) of a revision's full prefix section, signed in the bundle
-- header as `prefixes_pages_sha256` beside `prefixes_sha256`: an agent that keeps its base's page
-- digests checks a delta by hashing only the pages it touched, not the whole section (18 ms of
-- CPU for 1.2M prefixes, on every agent, for every delta). Made with the section; a delta row
-- holds its revision's, as it holds its `prefixes_sha256`. NULL for rows stored before this
-- migration: their bundles leave the field out and agents check `prefixes_sha256` as before.
ALTER TABLE bundle_sections ADD COLUMN prefixes_pages_sha256 text;
