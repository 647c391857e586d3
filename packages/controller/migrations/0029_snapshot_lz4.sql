-- Snapshot prefixes compressed with lz4 where the server has it (PostgreSQL 14+ built with lz4,
-- as Debian's and the official images are). 0006 stored them out of line uncompressed because
-- pglz made an 850k-prefix row write take 1.2 s instead of 0.5 s; lz4 compresses ~4x (a
-- 60k-prefix row 1.15 MB -> 0.3 MB, in its table and in the WAL) and the same row's DELETE,
-- INSERT and COMMIT take ~16 ms instead of ~21 ms; reading it back costs the same. Rows written
-- before keep their storage until rewritten (every refresh rewrites its modules' rows); readers
-- see no difference, so controllers of either side of this migration share the table. A server
-- without lz4 (the embedded database) keeps the uncompressed storage.
DO $$
BEGIN
  ALTER TABLE snapshots ALTER COLUMN prefixes SET COMPRESSION lz4;
  ALTER TABLE snapshots ALTER COLUMN prefixes SET STORAGE EXTENDED;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
